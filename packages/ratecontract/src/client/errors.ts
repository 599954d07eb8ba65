import { RateContractError, type ErrorCode } from '../core/errors.js';

/** Why the client stopped retrying. */
export type GiveUpReason =
  /** `maxAttempts` attempts were made. */
  | 'attempts'
  /** The server asked for a wait above `maxRetryAfter`. */
  | 'max-retry-after'
  /** The next wait would take the total past `maxWait`. */
  | 'max-wait'
  /** The retry budget of the origin is spent. */
  | 'budget'
  /** Adaptive throttling refused the attempt locally. */
  | 'throttled';

/** What a give-up error carries. */
export interface GiveUpDetails {
  readonly reason: GiveUpReason;
  readonly response: Response | undefined;
  readonly attempts: number;
  readonly retryAfterMs: number | undefined;
  readonly cause?: unknown;
}

/**
 * Thrown by a `createFetch` function that gave up on a request that kept
 * being rejected (429, 503 or another `retryOn` status), or that it would
 * have had to wait for longer than it may (`maxRetryAfter`, `maxWait`).
 * Code `RC_RATE_LIMITED`.
 */
export class RateLimitedError extends RateContractError {
  /** Why it gave up. */
  readonly reason: GiveUpReason;
  /**
   * The last response (its body unread), or `undefined` when the client gave
   * up before any answer: pacing would have waited too long, or every
   * attempt failed at the network level.
   */
  readonly response: Response | undefined;
  /** Attempts sent for this call (0 when it gave up before sending). */
  readonly attempts: number;
  /** The wait the server asked for, in ms (`Retry-After`, else `RateLimit` `t`), or `undefined` if it named none. */
  readonly retryAfterMs: number | undefined;
  /** The last response's status, if any. */
  readonly status: number | undefined;

  constructor(message: string, details: GiveUpDetails, code: ErrorCode = 'RC_RATE_LIMITED') {
    super(code, message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'RateLimitedError';
    this.reason = details.reason;
    this.response = details.response;
    this.attempts = details.attempts;
    this.retryAfterMs = details.retryAfterMs;
    this.status = details.response?.status;
  }
}

/**
 * Thrown when a retry was refused by the client's own budget: the origin's
 * retry budget is spent (`reason: 'budget'`), or adaptive throttling refused
 * the attempt (`reason: 'throttled'`). A `RateLimitedError` too, so one
 * `instanceof` catches both. Code `RC_RETRY_BUDGET_EXCEEDED`.
 */
export class RetryBudgetExceededError extends RateLimitedError {
  constructor(message: string, details: GiveUpDetails) {
    super(message, details, 'RC_RETRY_BUDGET_EXCEEDED');
    this.name = 'RetryBudgetExceededError';
  }
}
