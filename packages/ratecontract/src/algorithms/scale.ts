import { ceilDiv, type AlgorithmParams } from './types.js';

/**
 * How the bucket algorithms (token-bucket, leaky-bucket, gcra) count.
 *
 * All three are one meter: a cost unit ("token") is worth `T` units of
 * time, and `K` units pass per ms. The exact representation is `K = N`,
 * `T = W` (time in 1/N ms, so the emission interval W/N ms is exactly W
 * units): every quantity stays below 2^50 while `max(N, B) * W <= 2^49`.
 *
 * Beyond that (quota-sized limits: 10^7 per day, 10^12 bytes per 30 days) the
 * exact units would overflow the 2^53 of doubles (and of Lua numbers). There
 * the meter counts in `K = 2^j` units per ms, with `j` the largest for which
 * the bucket `B * T` and one window `W * K` stay within 2^51, and
 * `T = ceil(W * K / N)`: each token costs at least its true W/N ms (rounded
 * up by less than 1/K ms), so the meter admits less, never more, and waits
 * longer, never shorter. Its rate `K / T` per ms is below `N / W` by a
 * relative error under `N / (W * K)`; docs/algorithms.md tabulates it.
 * The Lua twins compute the same `K` and `T` with the same operations
 * (`params()` in lua/includes/common.lua).
 */
export interface BucketScale {
  /** Units per ms. */
  readonly K: number;
  /** Units per token (cost unit): the emission interval, in units. */
  readonly T: number;
}

/** Largest `max(limit, burst) * windowMs` counted in the exact units (today's range, unchanged). */
export const EXACT_PRODUCT = 2 ** 49;
/** Ceiling for `B * T` and `W * K` in the scaled units (so `B*T + cost*T + K` stays below 2^53). */
export const SCALED_PRODUCT = 2 ** 51;

const cache = new WeakMap<AlgorithmParams, BucketScale>();

/** Whether `p` is in the exact range, where a bucket counts in `K = N`, `T = W`. */
export function isExact(p: AlgorithmParams): boolean {
  return Math.max(p.limit, p.burst) * p.windowMs <= EXACT_PRODUCT;
}

/**
 * Why the bucket algorithms cannot represent `p` (a sentence naming the
 * bound), or `undefined` when they can. Only the scaled range can fail:
 * even at `K = 1` (whole ms) the bucket of B tokens of `ceil(W / N)` ms each
 * must fit 2^51.
 */
export function bucketScaleProblem(p: AlgorithmParams): string | undefined {
  if (isExact(p)) return undefined;
  if (p.windowMs > SCALED_PRODUCT) return `window ${p.windowMs} ms is above 2^51 ms`;
  if (p.burst * ceilDiv(p.windowMs, p.limit) > SCALED_PRODUCT) {
    return `burst x ceil(window / limit) must stay within 2^51 ms (the bucket's refill time in whole ms); got ${p.burst} x ${ceilDiv(p.windowMs, p.limit)}`;
  }
  return undefined;
}

/** The scaled `K` and `T` of `p` (see `BucketScale`), for params outside the exact range. */
function computeScale(p: AlgorithmParams): BucketScale {
  const problem = bucketScaleProblem(p);
  if (problem !== undefined) throw new RangeError(`ratecontract: ${problem}`);
  const N = p.limit;
  const W = p.windowMs;
  const B = p.burst;
  let K = 1;
  let T = ceilDiv(W, N);
  for (;;) {
    const K2 = K * 2;
    if (W * K2 > SCALED_PRODUCT) break;
    const T2 = ceilDiv(W * K2, N);
    if (B * T2 > SCALED_PRODUCT) break;
    K = K2;
    T = T2;
  }
  return { K, T };
}

/**
 * `K` and `T` for `p`: `{ K: N, T: W }` in the exact range, the scaled units
 * beyond it (computed once per params object). The algorithms test
 * `isExact` inline first and call this only beyond the exact range, so the
 * exact path costs no lookup.
 */
export function bucketScale(p: AlgorithmParams): BucketScale {
  if (isExact(p)) return { K: p.limit, T: p.windowMs };
  let s = cache.get(p);
  if (s === undefined) {
    s = computeScale(p);
    cache.set(p, s);
  }
  return s;
}

/** `bucketScale(p).K` without allocating in the exact range. */
export function unitsPerMs(p: AlgorithmParams): number {
  return isExact(p) ? p.limit : bucketScale(p).K;
}

/** `bucketScale(p).T` without allocating in the exact range. */
export function unitsPerToken(p: AlgorithmParams): number {
  return isExact(p) ? p.windowMs : bucketScale(p).T;
}

/**
 * `floor(a * t / b)` for integers `a >= 0`, `t >= 0`, `b >= 1`, exactly,
 * as a double (BigInt, off the hot path: used by `bound()`).
 */
export function mulDivFloorBig(a: number, t: number, b: number): number {
  return Number((BigInt(a) * BigInt(t)) / BigInt(b));
}
