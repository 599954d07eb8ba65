import { ceilDiv, mulDivFloor, type AlgorithmParams, type Figures } from './types.js';

/**
 * State of a sliding window counted in `k` sub-windows (`precision: k`,
 * k >= 2): `w`, the start of the current sub-window, and `n`, the counts of
 * the current sub-window and the k before it (`n[0]` current, `n[i]` the
 * sub-window that started `i` sub-windows earlier), k + 1 counts in all.
 * Stored in Redis as the k + 2 doubles `w, n[0], ..., n[k]`: for k = 1 that
 * is exactly the two-counter state `w, c, p`.
 */
export interface SubWindowState {
  readonly w: number;
  readonly n: readonly number[];
}

/** Largest `precision`: a state of 62 doubles (496 bytes) unpacks in one call in the Lua twin. */
export const MAX_PRECISION = 60;

/** The sub-window length g = W / k (the limit compiler requires W to be a multiple of k). */
function subLength(p: AlgorithmParams, k: number): number {
  return p.windowMs / k;
}

/**
 * The count `i` sub-windows before the sub-window starting at `at`, for the
 * state `s` (zero outside what it holds): `s` rolled forward to `at`.
 */
function rolled(s: SubWindowState | undefined, shift: number, i: number, k: number): number {
  if (s === undefined) return 0;
  const j = i - shift;
  return j >= 0 && j <= k ? (s.n[j] ?? 0) : 0;
}

/**
 * The sub-window estimate: the k - 1 whole sub-windows before the current
 * one and the current one count in full; the oldest, which the trailing
 * window overlaps for `g - e` of its `g` ms, counts `old * (g - e) / g`,
 * rounded up (`held`). A request of `cost` is admitted iff
 * `held + rest + cost <= N`; since the right side is an integer this is the
 * exact comparison `old * (g - e) / g + rest + cost <= N`. With k = 1 it is
 * the two-counter rule.
 */
export function decideSubWindows(
  s: SubWindowState | undefined,
  now: number,
  cost: number,
  p: AlgorithmParams,
  k: number,
  out: Figures,
  into: SubWindowState | undefined,
): SubWindowState | undefined {
  const g = subLength(p, k);
  const N = p.limit;
  const w = Math.floor(now / g) * g;
  // How many sub-windows the state is behind `now` (more than k: nothing of it is left).
  const shift = s === undefined ? k + 1 : Math.min(k + 1, Math.max(0, (w - s.w) / g));
  const e = now - w;
  let rest = 0;
  for (let i = 0; i < k; i++) rest += rolled(s, shift, i, k);
  const old = rolled(s, shift, k, k);
  const held = old - mulDivFloor(old, e, g);
  if (held + rest + cost <= N) {
    out.allowed = true;
    out.remaining = N - rest - cost - held;
    out.retryAfterMs = 0;
    out.delayMs = 0;
    const nonEmpty = rest + cost + old > 0;
    if (!nonEmpty) {
      out.resetMs = 0;
      return undefined;
    }
    // Written from the oldest count down, so `into` may be `s` itself.
    const target = into !== undefined && into.n.length === k + 1 ? (into as { w: number; n: number[] }) : { w, n: new Array<number>(k + 1).fill(0) };
    for (let i = k; i >= 0; i--) target.n[i] = rolled(s, shift, i, k);
    target.n[0] = (target.n[0] ?? 0) + cost;
    target.w = w;
    out.resetMs = lastUse(target, g, p.windowMs) - now;
    return target;
  }
  let retryAt = Infinity;
  if (cost <= N) {
    // The estimate only falls while nothing is admitted: within a sub-window
    // the oldest count's weight decays, and at each boundary the oldest
    // count leaves and the next one starts to decay from full weight. The
    // first sub-window (from now on) where the request fits, and the first
    // ms in it, is the exact wait.
    let r = rest;
    for (let j = 0; j <= k + 1; j++) {
      const start = w + j * g;
      const oldJ = j <= k ? rolled(s, shift, k - j, k) : 0;
      if (j > 0) r -= j <= k ? rolled(s, shift, k - j, k) : 0;
      // After j boundaries: the whole sub-windows are the rolled counts 0 .. k-1-j.
      const room = N - r - cost;
      if (room < 0) continue;
      if (j > 0 && room >= oldJ) {
        retryAt = start;
        break;
      }
      if (oldJ > 0) {
        const at = g - mulDivFloor(room, g, oldJ);
        if (at < g) {
          retryAt = start + at;
          break;
        }
      }
    }
  }
  out.allowed = false;
  out.remaining = Math.max(0, N - rest - held);
  out.retryAfterMs = retryAt - now;
  out.delayMs = 0;
  if (rest + old === 0) {
    out.resetMs = 0;
    return undefined;
  }
  const n = new Array<number>(k + 1);
  for (let i = 0; i <= k; i++) n[i] = rolled(s, shift, i, k);
  const normal = { w, n };
  out.resetMs = lastUse(normal, g, p.windowMs) - now;
  return normal;
}

/**
 * When the state stops mattering: the sub-window `i` back (started at
 * `w - i g`) weighs in the estimate until `w - i g + W + g`; the latest of
 * those over the non-zero counts, or `w` when every count is zero.
 */
function lastUse(s: SubWindowState, g: number, W: number): number {
  for (let i = 0; i < s.n.length; i++) if ((s.n[i] ?? 0) > 0) return s.w - i * g + W + g;
  return s.w;
}

/** Gives back `cost` counted in the current sub-window (nothing once that sub-window has passed). */
export function refundSubWindows(s: SubWindowState, now: number, cost: number, p: AlgorithmParams, k: number): SubWindowState | undefined {
  const g = subLength(p, k);
  const w = Math.floor(now / g) * g;
  if (s.w !== w) return s;
  const n = s.n.slice();
  n[0] = Math.max(0, (n[0] ?? 0) - cost);
  return { w, n };
}

/** When `s` becomes equivalent to no state (see `lastUse`). */
export function subWindowsExpireAt(s: SubWindowState, p: AlgorithmParams, k: number): number {
  return lastUse(s, subLength(p, k), p.windowMs);
}

/**
 * The largest cost admitted among requests in any interval of `t` ms. Such
 * an interval touches at most m = 1 + ceil((t - 1) / g) aligned
 * sub-windows. Every k consecutive sub-windows admit at most N (the rule
 * counts them whole), and k + 1 consecutive ones at most 2N - 1: when the
 * oldest holds anything, its weight (at least 1/g of it) is still counted
 * at the last admission of the newest. So N x ceil(m / k), and across more
 * than k sub-windows also 2N - 1 + N x ceil((m - k - 1) / k), whichever is
 * smaller. k = 1 gives the two-counter bound.
 */
export function subWindowsBound(p: AlgorithmParams, k: number, t: number): number {
  if (t <= 0) return 0;
  const g = subLength(p, k);
  const m = 1 + ceilDiv(t - 1, g);
  const N = p.limit;
  const groups = N * ceilDiv(m, k);
  if (m <= k) return groups;
  return Math.min(groups, 2 * N - 1 + N * ceilDiv(m - k - 1, k));
}
