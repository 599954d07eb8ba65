import { bucketScale, EXACT_PRODUCT, mulDivFloorBig, unitsPerMs, unitsPerToken } from './scale.js';
import { ceilDiv, figures, resultOf, type Algorithm, type AlgorithmParams, type Figures } from './types.js';

/**
 * State of a leaky bucket: the level, in units of 1/T (it drains K units per
 * ms), and the time of the last update. T = W and K = N in the exact range;
 * beyond it, the scaled units of `bucketScale` (scale.ts).
 */
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
  // Units: K per ms, T per unit of cost (exact range: K = N, T = W).
  let K = p.limit;
  let T = p.windowMs;
  if (Math.max(K, p.burst) * T > EXACT_PRODUCT) {
    const sc = bucketScale(p);
    K = sc.K;
    T = sc.T;
  }
  const depth = p.burst * T;
  const level = s === undefined ? 0 : Math.max(0, s.l - Math.max(0, now - s.t) * K);
  const next = level + cost * T;
  if (next <= depth) {
    out.allowed = true;
    out.remaining = Math.floor((depth - next) / T);
    out.resetMs = ceilDiv(next, K);
    out.retryAfterMs = 0;
    out.delayMs = p.queue && cost > 0 ? ceilDiv(level, K) : 0;
    return next > 0 ? put(into, next, now) : undefined;
  }
  out.allowed = false;
  out.remaining = Math.floor((depth - level) / T);
  out.resetMs = ceilDiv(level, K);
  out.retryAfterMs = cost > p.burst ? Infinity : ceilDiv(next - depth, K);
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
    const l = s.l - cost * unitsPerToken(p);
    return l > 0 ? { l, t: s.t } : undefined;
  },
  expiresAt(s, p) {
    return s.t + ceilDiv(s.l, unitsPerMs(p));
  },
  bound(p, t) {
    if (t <= 0) return 0;
    const K = unitsPerMs(p);
    const T = unitsPerToken(p);
    return p.burst + ((t - 1) * K <= EXACT_PRODUCT ? Math.floor(((t - 1) * K) / T) : mulDivFloorBig(t - 1, K, T));
  },
  capacity(p) {
    return p.burst;
  },
};
