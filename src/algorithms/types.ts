/**
 * The contract every algorithm implements. Algorithms are pure functions over
 * integer-millisecond time; the memory store runs them directly and the Redis
 * store runs a Lua twin of each. All arithmetic is integer arithmetic on values
 * below 2^53, so the TypeScript and Lua versions agree bit for bit.
 */

/** Names of the built-in algorithms. */
export type AlgorithmName =
  | 'fixed-window'
  | 'sliding-log'
  | 'sliding-window'
  | 'token-bucket'
  | 'leaky-bucket'
  | 'gcra'
  | 'concurrency';

/** Normalised parameters of one limit, as the algorithms see them. */
export interface AlgorithmParams {
  /** N: admitted cost per window (or, for `concurrency`, cost in flight). */
  readonly limit: number;
  /** W in integer milliseconds (for `concurrency`: the lease lifetime). */
  readonly windowMs: number;
  /** B: bucket capacity for token-bucket, leaky-bucket and gcra; equal to `limit` elsewhere. */
  readonly burst: number;
  /** leaky-bucket only: queue mode (delay instead of admitting at once). */
  readonly queue: boolean;
}

/** What an algorithm returns for one request. */
export interface AlgorithmResult<S> {
  /** Whether the request fits. */
  readonly allowed: boolean;
  /**
   * The state to store if the request is admitted and consumed. For a
   * rejected request, or cost 0 (a peek), the current state normalised to
   * `now`, which callers need not write. `undefined` means "nothing to keep".
   */
  readonly state: S | undefined;
  /** Cost that would still fit right now, after this request if it was admitted. */
  readonly remaining: number;
  /** Milliseconds until the state is empty again (the full quota is back) if nothing else arrives. Also the state's useful life. */
  readonly resetMs: number;
  /**
   * 0 when allowed. Otherwise the exact wait in ms: the same request at
   * `now + retryAfterMs` is admitted and at `now + retryAfterMs - 1` is not, if
   * nothing else consumes. `Infinity` when the cost can never fit (cost above
   * the burst capacity).
   */
  readonly retryAfterMs: number;
  /** leaky-bucket queue mode: how long the admitted request must wait before it proceeds. 0 elsewhere. */
  readonly delayMs: number;
}

/** One algorithm: a pure decision function plus what the stores and the docs need to know about it. */
export interface Algorithm<S> {
  readonly name: AlgorithmName;
  /** Whether the limit's `burst` option applies to this algorithm. */
  readonly usesBurst: boolean;
  /**
   * Decides one request of `cost` (an integer >= 0; 0 peeks without
   * consuming) at time `now`. `leaseId` is used by `concurrency` only.
   */
  decide(state: S | undefined, now: number, cost: number, p: AlgorithmParams, leaseId?: string): AlgorithmResult<S>;
  /** Gives back `cost` consumed at `now` (compensation of a partial chain admission). */
  refund(state: S, now: number, cost: number, p: AlgorithmParams, leaseId?: string): S | undefined;
  /** The time at which `state` becomes equivalent to no state at all (used to reclaim memory and set TTLs). */
  expiresAt(state: S, p: AlgorithmParams): number;
  /**
   * The largest total cost this algorithm can admit for one key among
   * requests whose timestamps lie in any half-open interval of `t` ms, or
   * (concurrency) the largest cost in flight.
   */
  bound(p: AlgorithmParams, t: number): number;
  /** The largest cost one request can ever have. */
  capacity(p: AlgorithmParams): number;
  /**
   * Copies `from` into the existing state object `into` and returns true, or
   * returns false when the state cannot be updated in place. Lets the memory
   * store keep one long-lived object per key instead of replacing it on every
   * decision (old-generation garbage is what costs at 100,000 keys).
   */
  overwrite(into: S, from: S): boolean;
}

/** Integer ceiling division for non-negative integers. */
export function ceilDiv(a: number, b: number): number {
  return Math.floor((a + b - 1) / b);
}
