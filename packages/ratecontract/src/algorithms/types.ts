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
  /**
   * sliding-window only: sub-windows per window (`precision`, docs/algorithms.md,
   * "Sliding window precision"). Absent or 1: the two-counter estimate.
   * `windowMs` is a multiple of it.
   */
  readonly precision?: number | undefined;
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
   * The same decision as `decide`, without allocating a result: writes the
   * figures into `out` and returns what `decide` returns as `state`. When the
   * request is admitted and the returned state is not empty, it is `into`
   * (when given) with its fields overwritten, instead of a new object; `into`
   * may be `s` itself (it is written only after `s` has been read). Lets the
   * memory store keep one long-lived object per key instead of replacing it
   * on every decision (old-generation garbage is what costs at 100,000 keys)
   * and reuse one `out` for every decision. For the algorithms whose state is
   * a few integers, `decide` is this function with a fresh `out`, so the two
   * cannot disagree; sliding-log and concurrency keep immutable state and
   * derive this from `decide` (they ignore `into`).
   */
  decideInto(s: S | undefined, now: number, cost: number, p: AlgorithmParams, out: Figures, into: S | undefined, leaseId?: string): S | undefined;
}

/**
 * The figures of one decision: an `AlgorithmResult` without its state,
 * mutable so that one object can take every decision's figures in turn
 * (`Algorithm.decideInto`). Create with `figures()` so that every instance
 * has the same shape.
 */
export interface Figures {
  allowed: boolean;
  remaining: number;
  resetMs: number;
  retryAfterMs: number;
  delayMs: number;
}

/** A new, zeroed `Figures`. */
export function figures(): Figures {
  return { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 };
}

/** An `AlgorithmResult` from the figures `decideInto` wrote and the state it returned (how `decide` is built from `decideInto`). */
export function resultOf<S>(f: Figures, state: S | undefined): AlgorithmResult<S> {
  return { allowed: f.allowed, state, remaining: f.remaining, resetMs: f.resetMs, retryAfterMs: f.retryAfterMs, delayMs: f.delayMs };
}

/** Copies an `AlgorithmResult`'s figures into `out` and returns its state (how `decideInto` is built from `decide`). */
export function intoFigures<S>(r: AlgorithmResult<S>, out: Figures): S | undefined {
  out.allowed = r.allowed;
  out.remaining = r.remaining;
  out.resetMs = r.resetMs;
  out.retryAfterMs = r.retryAfterMs;
  out.delayMs = r.delayMs;
  return r.state;
}

/** Integer ceiling division for non-negative integers. */
export function ceilDiv(a: number, b: number): number {
  return Math.floor((a + b - 1) / b);
}

/**
 * `a % b` for integers `0 <= a < 2^53` and `b >= 1`: the same value (what C
 * `fmod`, and so the Lua twins' `math.fmod`, computes), without V8's call to
 * `fmod`, which costs tens of ns when `a / b` is large. Exact:
 * `Math.floor(a / b)` is the true quotient q for such integers (a
 * correctly rounded a/b can reach q + 1 only when a >= 2^53), and `q * b <= a`
 * is an exact integer.
 */
export function intMod(a: number, b: number): number {
  return a - Math.floor(a / b) * b;
}

/**
 * `floor(a * b / c)`, exactly, for integers `0 <= a < 2^41`, `0 <= b < 2^36`,
 * `1 <= c < 2^40` whose quotient is below 2^53 (the sliding window's
 * `count * ms / ms` and `count * ms / count` at quota magnitudes, where the
 * product itself can pass 2^53). When the product is below 2^53 it is
 * exact and this is `Math.floor(a * b / c)`. Otherwise `b` is split into
 * three 12-bit digits and the quotient built digit by digit (long
 * multiplication by `b` interleaved with division by `c`), every partial
 * product below 2^53. The Lua twin (`mul_div_floor` in common.lua) does the
 * same operations in the same order.
 */
export function mulDivFloor(a: number, b: number, c: number): number {
  const ab = a * b;
  if (ab < 9_007_199_254_740_992) return Math.floor(ab / c);
  const b0 = intMod(b, 4096);
  const high = (b - b0) / 4096;
  const b1 = intMod(high, 4096);
  const b2 = (high - b1) / 4096;
  let q = 0;
  let r = 0;
  for (let i = 0; i < 3; i++) {
    const digit = i === 0 ? b2 : i === 1 ? b1 : b0;
    // (q*c + r) * 4096 + a*digit, as a new quotient and remainder.
    const x = r * 4096;
    const y = a * digit;
    const qx = Math.floor(x / c);
    const qy = Math.floor(y / c);
    const rest = x - qx * c + (y - qy * c);
    const carry = rest >= c ? 1 : 0;
    q = q * 4096 + qx + qy + carry;
    r = rest - carry * c;
  }
  return q;
}
