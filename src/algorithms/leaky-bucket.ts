import { ceilDiv, figures, resultOf, type Algorithm, type AlgorithmParams, type Figures } from './types.js';

/** State of a leaky bucket: the level, in units of 1/W (it drains N units per ms), and the time of the last update. */
export interface LeakyBucketState {
  readonly l: number;
  readonly t: number;
}

/** `{ l, t }`, written into `into` when given. */
function put(into: LeakyBucketState | undefined, l: number, t: number): LeakyBucketState {
  if (into === undefined) return { l, t };
  const target = into as { l: number; t: number };
  target.l = l;
  target.t = t;
  return into;
}

function decideInto(s: LeakyBucketState | undefined, now: number, cost: number, p: AlgorithmParams, out: Figures, into: LeakyBucketState | undefined): LeakyBucketState | undefined {
  const W = p.windowMs;
  const N = p.limit;
  const depth = p.burst * W;
  const level = s === undefined ? 0 : Math.max(0, s.l - Math.max(0, now - s.t) * N);
  const next = level + cost * W;
  if (next <= depth) {
    out.allowed = true;
    out.remaining = Math.floor((depth - next) / W);
    out.resetMs = ceilDiv(next, N);
    out.retryAfterMs = 0;
    out.delayMs = p.queue && cost > 0 ? ceilDiv(level, N) : 0;
    return next > 0 ? put(into, next, now) : undefined;
  }
  out.allowed = false;
  out.remaining = Math.floor((depth - level) / W);
  out.resetMs = ceilDiv(level, N);
  out.retryAfterMs = cost > p.burst ? Infinity : ceilDiv(next - depth, N);
  out.delayMs = 0;
  return level > 0 ? { l: level, t: now } : undefined;
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
    const out = figures();
    return resultOf(out, decideInto(s, now, cost, p, out, undefined));
  },
  decideInto,
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
  capacity(p) {
    return p.burst;
  },
};
