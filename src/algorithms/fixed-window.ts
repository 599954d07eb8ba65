import { ceilDiv, type Algorithm } from './types.js';

/** State of a fixed window: the window's start and the cost counted in it. */
export interface FixedWindowState {
  readonly w: number;
  readonly c: number;
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
    const W = p.windowMs;
    const N = p.limit;
    const w = Math.floor(now / W) * W;
    const c = s !== undefined && s.w === w ? s.c : 0;
    const resetMs = w + W - now;
    if (c + cost <= N) {
      const next = c + cost;
      return {
        allowed: true,
        state: next > 0 ? { w, c: next } : undefined,
        remaining: N - next,
        resetMs: next > 0 ? resetMs : 0,
        retryAfterMs: 0,
        delayMs: 0,
      };
    }
    return {
      allowed: false,
      state: c > 0 ? { w, c } : undefined,
      remaining: N - c,
      resetMs: c > 0 ? resetMs : 0,
      retryAfterMs: cost > N ? Infinity : resetMs,
      delayMs: 0,
    };
  },
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
  overwrite(into, from) {
    const target = into as { w: number; c: number };
    target.w = from.w;
    target.c = from.c;
    return true;
  },
  capacity(p) {
    return p.limit;
  },
};
