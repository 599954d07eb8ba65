import { ceilDiv, figures, resultOf, type Algorithm, type AlgorithmParams, type Figures } from './types.js';

/** State of a fixed window: the window's start and the cost counted in it. */
export interface FixedWindowState {
  readonly w: number;
  readonly c: number;
}

/** `{ w, c }`, written into `into` when given. */
function put(into: FixedWindowState | undefined, w: number, c: number): FixedWindowState {
  if (into === undefined) return { w, c };
  const target = into as { w: number; c: number };
  target.w = w;
  target.c = c;
  return into;
}

function decideInto(s: FixedWindowState | undefined, now: number, cost: number, p: AlgorithmParams, out: Figures, into: FixedWindowState | undefined): FixedWindowState | undefined {
  const W = p.windowMs;
  const N = p.limit;
  const w = Math.floor(now / W) * W;
  const c = s !== undefined && s.w === w ? s.c : 0;
  const resetMs = w + W - now;
  if (c + cost <= N) {
    const next = c + cost;
    out.allowed = true;
    out.remaining = N - next;
    out.resetMs = next > 0 ? resetMs : 0;
    out.retryAfterMs = 0;
    out.delayMs = 0;
    return next > 0 ? put(into, w, next) : undefined;
  }
  out.allowed = false;
  out.remaining = N - c;
  out.resetMs = c > 0 ? resetMs : 0;
  out.retryAfterMs = cost > N ? Infinity : resetMs;
  out.delayMs = 0;
  return c > 0 ? { w, c } : undefined;
}

/**
 * Fixed window, epoch-aligned: one counter per window `[k*W, (k+1)*W)`.
 *
 * Bound: at most N per aligned window, so up to **2N** in an interval of
 * length W that straddles a boundary (N at the end of one window, N at the
 * start of the next). Pros: one integer per key, trivially cheap. Cons: the
 * boundary burst; use it for coarse quota accounting, not for capacity.
 */
export const fixedWindow: Algorithm<FixedWindowState> = {
  name: 'fixed-window',
  usesBurst: false,
  decide(s, now, cost, p) {
    const out = figures();
    return resultOf(out, decideInto(s, now, cost, p, out, undefined));
  },
  decideInto,
  refund(s, now, cost, p) {
    const w = Math.floor(now / p.windowMs) * p.windowMs;
    if (s.w !== w) return s;
    const c = s.c - cost;
    return c > 0 ? { w, c } : undefined;
  },
  expiresAt(s, p) {
    return s.w + p.windowMs;
  },
  bound(p, t) {
    if (t <= 0) return 0;
    // t integer timestamps cross at most ceil((t-1)/W) window boundaries.
    return p.limit * (1 + ceilDiv(t - 1, p.windowMs));
  },
  capacity(p) {
    return p.limit;
  },
};
