import { EXACT_PRODUCT } from './scale.js';
import { decideSubWindows, refundSubWindows, subWindowsBound, subWindowsExpireAt, type SubWindowState } from './sub-windows.js';
import { ceilDiv, figures, mulDivFloor, resultOf, type Algorithm, type AlgorithmParams, type Figures } from './types.js';

/** State of a two-counter sliding window: start of the current aligned window, its count, and the previous window's count. */
export interface SlidingWindowState {
  readonly w: number;
  readonly c: number;
  readonly p: number;
}

/**
 * The two-counter estimate of the cost in the trailing window, at `elapsed`
 * ms into the current aligned window: `prev * (W - elapsed) / W + curr`. It
 * assumes the previous window's requests were spread evenly.
 *
 * Example (the published worked example): prev 42, curr 18, 15 s into a
 * 60 s window -> 42 * 45/60 + 18 = 49.5.
 */
export function slidingWindowEstimate(prev: number, curr: number, elapsedMs: number, windowMs: number): number {
  return (prev * (windowMs - elapsedMs)) / windowMs + curr;
}

/** `{ w, c, p }`, written into `into` when given. */
function put(into: SlidingWindowState | undefined, w: number, c: number, prev: number): SlidingWindowState {
  if (into === undefined) return { w, c, p: prev };
  const target = into as { w: number; c: number; p: number };
  target.w = w;
  target.c = c;
  target.p = prev;
  return into;
}

/** The exact range: the cross-multiplied rule in plain products, all below 2^50. */
function decideExact(s: SlidingWindowState | undefined, now: number, cost: number, p: AlgorithmParams, out: Figures, into: SlidingWindowState | undefined): SlidingWindowState | undefined {
  const W = p.windowMs;
  const N = p.limit;
  const w = Math.floor(now / W) * W;
  // Roll the state forward to the window of `now`: the current and previous windows' counts.
  let c = 0;
  let prev = 0;
  if (s !== undefined) {
    if (s.w === w) {
      c = s.c;
      prev = s.p;
    } else if (s.w === w - W) {
      prev = s.c;
    }
  }
  const elapsed = now - w;
  const weighted = prev * (W - elapsed);
  const capacity = N * W;
  if (weighted + (c + cost) * W <= capacity) {
    const next = c + cost;
    out.allowed = true;
    out.remaining = Math.floor((capacity - weighted - next * W) / W);
    out.resetMs = next > 0 ? w + 2 * W - now : prev > 0 ? w + W - now : 0;
    out.retryAfterMs = 0;
    out.delayMs = 0;
    return next > 0 || prev > 0 ? put(into, w, next, prev) : undefined;
  }
  let retryAt = Infinity;
  if (cost <= N) {
    const room = N - c - cost;
    // Within the current window the previous window's weight decays.
    if (room >= 0 && prev > 0) {
      const e = W - Math.floor((room * W) / prev);
      if (e < W) retryAt = w + e;
    }
    if (retryAt === Infinity) {
      // Next window: the current count becomes the previous one.
      const e = c === 0 ? 0 : Math.max(0, W - Math.floor(((N - cost) * W) / c));
      retryAt = w + W + e;
    }
  }
  out.allowed = false;
  out.remaining = Math.max(0, Math.floor((capacity - weighted - c * W) / W));
  out.resetMs = c > 0 ? w + 2 * W - now : prev > 0 ? w + W - now : 0;
  out.retryAfterMs = retryAt - now;
  out.delayMs = 0;
  return c > 0 || prev > 0 ? { w, c, p: prev } : undefined;
}

/** Beyond 2^49: the same rule with `mulDivFloor`, exact where the products pass 2^53. */
function decideQuota(s: SlidingWindowState | undefined, now: number, cost: number, p: AlgorithmParams, out: Figures, into: SlidingWindowState | undefined): SlidingWindowState | undefined {
  const W = p.windowMs;
  const N = p.limit;
  const w = Math.floor(now / W) * W;
  // Roll the state forward to the window of `now`: the current and previous windows' counts.
  let c = 0;
  let prev = 0;
  if (s !== undefined) {
    if (s.w === w) {
      c = s.c;
      prev = s.p;
    } else if (s.w === w - W) {
      prev = s.c;
    }
  }
  const elapsed = now - w;
  // The previous window's weight, rounded up: ceil(prev * (W - elapsed) / W),
  // exactly (mulDivFloor stays exact where prev * elapsed passes 2^53). The
  // rule prev*(W - elapsed)/W + c + cost <= N has an integer right-hand side,
  // so comparing the ceiling is the same comparison, with no rounding.
  const held = prev - mulDivFloor(prev, elapsed, W);
  if (held + c + cost <= N) {
    const next = c + cost;
    out.allowed = true;
    out.remaining = N - next - held;
    out.resetMs = next > 0 ? w + 2 * W - now : prev > 0 ? w + W - now : 0;
    out.retryAfterMs = 0;
    out.delayMs = 0;
    return next > 0 || prev > 0 ? put(into, w, next, prev) : undefined;
  }
  let retryAt = Infinity;
  if (cost <= N) {
    const room = N - c - cost;
    // Within the current window the previous window's weight decays. Here
    // room < held <= prev, so the quotient is below W.
    if (room >= 0 && prev > 0) {
      const e = W - mulDivFloor(room, W, prev);
      if (e < W) retryAt = w + e;
    }
    if (retryAt === Infinity) {
      // Next window: the current count becomes the previous one
      // (no wait when N - cost >= c: the quotient would be W or more).
      const e = c === 0 || N - cost >= c ? 0 : W - mulDivFloor(N - cost, W, c);
      retryAt = w + W + e;
    }
  }
  out.allowed = false;
  out.remaining = Math.max(0, N - c - held);
  out.resetMs = c > 0 ? w + 2 * W - now : prev > 0 ? w + W - now : 0;
  out.retryAfterMs = retryAt - now;
  out.delayMs = 0;
  return c > 0 || prev > 0 ? { w, c, p: prev } : undefined;
}

/**
 * Within N * W <= 2^49 every product below is exact in doubles and the rule
 * is evaluated cross-multiplied, as it always was (`decideExact`); beyond,
 * the same rule through an exact `floor(a * b / c)` (`decideQuota`). Both
 * are exact, so they agree wherever both apply; the split keeps the common
 * case free of divisions.
 */
function decideTwo(s: SlidingWindowState | undefined, now: number, cost: number, p: AlgorithmParams, out: Figures, into: SlidingWindowState | undefined): SlidingWindowState | undefined {
  return p.limit * p.windowMs <= EXACT_PRODUCT ? decideExact(s, now, cost, p, out, into) : decideQuota(s, now, cost, p, out, into);
}

/** A sliding window's state: the two counters (precision 1), or the sub-window counts (precision k >= 2). */
export type AnySlidingWindowState = SlidingWindowState | SubWindowState;

/** `precision`, 1 when absent. */
function precisionOf(p: AlgorithmParams): number {
  return p.precision ?? 1;
}

/** Precision 1: the two-counter rule, unchanged; precision k >= 2: the sub-window rule (sub-windows.ts). */
function decideInto(s: AnySlidingWindowState | undefined, now: number, cost: number, p: AlgorithmParams, out: Figures, into: AnySlidingWindowState | undefined): AnySlidingWindowState | undefined {
  const k = precisionOf(p);
  if (k <= 1) return decideTwo(s as SlidingWindowState | undefined, now, cost, p, out, into as SlidingWindowState | undefined);
  return decideSubWindows(s as SubWindowState | undefined, now, cost, p, k, out, into as SubWindowState | undefined);
}

/**
 * Sliding window counter (two-counter estimate): two integers per key, the
 * previous and current aligned windows, weighted by how much of the previous
 * window still overlaps the trailing window.
 *
 * Comparison rule: a request of `cost` is admitted iff
 * `estimate(prev, curr) + cost <= N`, evaluated exactly in integers as
 * `prev * (W - elapsed) + (curr + cost) * W <= N * W`, computed as
 * `prev - floor(prev * elapsed / W) + curr + cost <= N` with an exact
 * `floor(a * b / c)` (`mulDivFloor`) that holds at quota magnitudes too, so
 * there is no floating-point rounding and the Lua twin agrees bit for bit.
 *
 * Bound: at most N per aligned window (the estimate is never below `curr`),
 * hence strictly under 2N in any interval of length W. The estimate is exact
 * when the previous window's traffic was uniform and errs either way when it
 * was not; docs/algorithms.md publishes the measured error. Pros: O(1)
 * memory, smooth, no 2N boundary burst in practice. Cons: approximate.
 *
 * With `precision: k` (k >= 2, `p.precision`) the window is counted in k
 * aligned sub-windows of W / k ms (sub-windows.ts): only the oldest
 * sub-window is estimated, the rest are counted exactly. At most N in any
 * k consecutive sub-windows, so at most N in any interval of
 * W - W/k + 1 ms, and at most 2N - 1 in any W (`bound`); k + 2 doubles of
 * state. docs/algorithms.md publishes the measured error per precision.
 */
export const slidingWindow: Algorithm<AnySlidingWindowState> = {
  name: 'sliding-window',
  usesBurst: false,
  decide(s, now, cost, p) {
    const out = figures();
    return resultOf(out, decideInto(s, now, cost, p, out, undefined));
  },
  decideInto,
  refund(state, now, cost, p) {
    const k = precisionOf(p);
    if (k > 1) return refundSubWindows(state as SubWindowState, now, cost, p, k);
    const s = state as SlidingWindowState;
    const w = Math.floor(now / p.windowMs) * p.windowMs;
    if (s.w !== w) return s;
    return { w, c: Math.max(0, s.c - cost), p: s.p };
  },
  expiresAt(state, p) {
    const k = precisionOf(p);
    if (k > 1) return subWindowsExpireAt(state as SubWindowState, p, k);
    const s = state as SlidingWindowState;
    return s.c > 0 ? s.w + 2 * p.windowMs : s.w + p.windowMs;
  },
  bound(p, t) {
    const k = precisionOf(p);
    if (k > 1) return subWindowsBound(p, k, t);
    if (t <= 0) return 0;
    // N per aligned window; an interval of t ms touches at most 1 + ceil((t-1)/W)
    // of them, and across a boundary the previous window's weight keeps the
    // pair strictly under 2N (so at most 2N - 1 in integers).
    const crossings = ceilDiv(t - 1, p.windowMs);
    return p.limit * (1 + crossings) - (crossings > 0 ? 1 : 0);
  },
  capacity(p) {
    return p.limit;
  },
};
