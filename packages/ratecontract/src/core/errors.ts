/**
 * Stable error codes. A code never changes meaning once released; see docs/errors.md.
 */
export type ErrorCode =
  | 'RC_INVALID_OPTION'
  | 'RC_MISSING_PURPOSE'
  | 'RC_INVALID_PURPOSE'
  | 'RC_INVALID_LIMIT'
  | 'RC_INVALID_WINDOW'
  | 'RC_INVALID_BURST'
  | 'RC_BURST_BELOW_COST'
  | 'RC_UNKNOWN_ALGORITHM'
  | 'RC_DUPLICATE_NAME'
  | 'RC_INVALID_NAME'
  | 'RC_INVALID_KEY'
  | 'RC_UNKNOWN_STORE'
  | 'RC_FAIL_OPEN_UNACKNOWLEDGED'
  | 'RC_INVALID_COST'
  | 'RC_STORE_FAILURE'
  | 'RC_STORE_TIMEOUT'
  | 'RC_BREAKER_OPEN'
  | 'RC_STORE_BUSY'
  | 'RC_STORE_NOT_READY'
  | 'RC_RATE_LIMITED'
  | 'RC_RETRY_BUDGET_EXCEEDED'
  | 'RC_UNKNOWN_LIMIT'
  | 'RC_INVALID_ROUTE'
  | 'RC_DUPLICATE_ROUTE'
  | 'RC_CONFIG_SYNTAX'
  | 'RC_CONFIG_UNREADABLE'
  | 'RC_UNSUPPORTED_STORE'
  | 'RC_UNKNOWN_PLAN';

/** Base class of every error ratecontract throws. `code` is stable; `cause` is chained. */
export class RateContractError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RateContractError';
    this.code = code;
  }
}

/**
 * Thrown at construction (`createLimiter`, `memoryStore`, ...) for an invalid
 * configuration. `option` is the path of the offending option, for example
 * `limits[2].burst`.
 */
export class ConfigError extends RateContractError {
  readonly option: string;

  constructor(code: ErrorCode, option: string, message: string, options?: { cause?: unknown }) {
    super(code, `${option}: ${message}`, options);
    this.name = 'ConfigError';
    this.option = option;
  }
}

/** Thrown (only) by a programmer error at call time, such as a negative cost. */
export class UsageError extends RateContractError {
  constructor(code: ErrorCode, message: string) {
    super(code, message);
    this.name = 'UsageError';
  }
}

/**
 * An operator call (`limiter.peek`, `limiter.reset`) that its store could
 * not answer (code `RC_STORE_FAILURE`, the backend error in `cause`, or
 * `RC_STORE_TIMEOUT`). Unlike `check`, these calls make no decision that a
 * fail mode could stand in for, so they reject.
 */
export class StoreError extends RateContractError {
  /** The store's name in the limiter (`'(default)'` for the default store). */
  readonly store: string;

  constructor(code: 'RC_STORE_FAILURE' | 'RC_STORE_TIMEOUT', store: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'StoreError';
    this.store = store;
  }
}
