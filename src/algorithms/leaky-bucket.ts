import { ceilDiv, type Algorithm } from './types.js';

/** State of a leaky bucket: the level, in units of 1/W (it drains N units per ms), and the time of the last update. */
export interface LeakyBucketState {
  readonly l: number;
  readonly t: number;
}

/**
 * Leaky bucket: a bucket of depth B that drains at r = N/W per ms; each
 * request adds `cost`; a request that would overflow is rejected.
 *
 * Two modes:
 * - **meter** (default): admit at once, like nginx `limit_req ... nodelay`.
 * - **queue** (`mode: 'queue'`): admit with `delayMs`, the time until the
 *   work ahead of it has drained, so admitted requests proceed paced at r,
 *   like nginx `limit_req` without `nodelay`. `burst` is the queue depth
 *   including the request in service (nginx `burst=b` is `burst: b + 1`).
 *
 * Bound: at most **B + r*t** admitted in any interval of length t; in queue
 * mode the delayed starts are spaced at least 1/r apart. As a meter it makes
 * the same decisions as `token-bucket` and `gcra` with the same N, W, B.
 */
export const leakyBucket: Algorithm<LeakyBucketState> = {
  name: 'leaky-bucket',
  usesBurst: true,
  decide(s, now, cost, p) {
    const W = p.windowMs;
    const N = p.limit;
    const depth = p.burst * W;
    const level = s === undefined ? 0 : Math.max(0, s.l - Math.max(0, now - s.t) * N);
    const next = level + cost * W;
    if (next <= depth) {
      return {
        allowed: true,
        state: next > 0 ? { l: next, t: now } : undefined,
        remaining: Math.floor((depth - next) / W),
        resetMs: ceilDiv(next, N),
        retryAfterMs: 0,
        delayMs: p.queue && cost > 0 ? ceilDiv(level, N) : 0,
      };
    }
    return {
      allowed: false,
      state: level > 0 ? { l: level, t: now } : undefined,
      remaining: Math.floor((depth - level) / W),
      resetMs: ceilDiv(level, N),
      retryAfterMs: cost > p.burst ? Infinity : ceilDiv(next - depth, N),
      delayMs: 0,
    };
  },
  refund(s, _now, cost, p) {
    const l = s.l - cost * p.windowMs;
    return l > 0 ? { l, t: s.t } : undefined;
  },
  expiresAt(s, p) {
    return s.t + ceilDiv(s.l, p.limit);
  },
  bound(p, t) {
    if (t <= 0) return 0;
    return p.burst + Math.floor(((t - 1) * p.limit) / p.windowMs);
  },
  overwrite(into, from) {
    const target = into as { l: number; t: number };
    target.l = from.l;
    target.t = from.t;
    return true;
  },
  capacity(p) {
    return p.burst;
  },
};
