import { bucketScale, EXACT_PRODUCT, mulDivFloorBig, unitsPerMs, unitsPerToken } from './scale.js';
import { ceilDiv, figures, resultOf, type Algorithm, type AlgorithmParams, type Figures } from './types.js';

/**
 * State of a token bucket: the tokens held, in units of 1/T token, refilled
 * K units per ms, and the time of the last update. In the exact range
 * (`max(N, B) * W <= 2^49`) T = W and K = N, so the refill of N tokens per
 * W ms is exactly N units per ms; beyond it, the scaled units of
 * `bucketScale` (scale.ts).
 */
export interface TokenBucketState {
  readonly u: number;
  readonly t: number;
}

/** `{ u, t }`, written into `into` when given. */
function put(into: TokenBucketState | undefined, u: number, t: number): TokenBucketState {
  if (into === undefined) return { u, t };
  const target = into as { u: number; t: number };
  target.u = u;
  target.t = t;
  return into;
}

function decideInto(s: TokenBucketState | undefined, now: number, cost: number, p: AlgorithmParams, out: Figures, into: TokenBucketState | undefined): TokenBucketState | undefined {
  // Units: K per ms, T per token (exact range: K = N, T = W).
  let K = p.limit;
  let T = p.windowMs;
  if (Math.max(K, p.burst) * T > EXACT_PRODUCT) {
    const sc = bucketScale(p);
    K = sc.K;
    T = sc.T;
  }
  const cap = p.burst * T;
  const units = s === undefined ? cap : Math.min(cap, s.u + Math.max(0, now - s.t) * K);
  const need = cost * T;
  if (units >= need) {
    const left = units - need;
    out.allowed = true;
    out.remaining = Math.floor(left / T);
    out.resetMs = ceilDiv(cap - left, K);
    out.retryAfterMs = 0;
    out.delayMs = 0;
    return left < cap ? put(into, left, now) : undefined;
  }
  out.allowed = false;
  out.remaining = Math.floor(units / T);
  out.resetMs = ceilDiv(cap - units, K);
  out.retryAfterMs = cost > p.burst ? Infinity : ceilDiv(need - units, K);
  out.delayMs = 0;
  return units < cap ? { u: units, t: now } : undefined;
}

/**
 * Token bucket with continuous lazy refill: a bucket of B tokens refilled at
 * r = N/W tokens per ms, each request spends `cost` tokens.
 *
 * Bound: at most **B + r*t** cost in any interval of length t (B spent at
 * once, then the refill). Burst (B) and sustained rate (r) are independent
 * knobs. Integer arithmetic: tokens are kept in units of 1/W, so the refill
 * per ms is the integer N and nothing drifts (beyond the exact range, in
 * the scaled units of scale.ts, a token rounded up to a whole unit). Pros: bursts are a policy, not
 * an accident; O(1) state. Cons: two numbers per key (GCRA needs one).
 */
export const tokenBucket: Algorithm<TokenBucketState> = {
  name: 'token-bucket',
  usesBurst: true,
  decide(s, now, cost, p) {
    const out = figures();
    return resultOf(out, decideInto(s, now, cost, p, out, undefined));
  },
  decideInto,
  refund(s, now, cost, p) {
    const T = unitsPerToken(p);
    const cap = p.burst * T;
    const u = Math.min(cap, s.u + cost * T);
    return u < cap ? { u, t: s.t } : undefined;
  },
  expiresAt(s, p) {
    const K = unitsPerMs(p);
    const T = unitsPerToken(p);
    return s.t + ceilDiv(p.burst * T - s.u, K);
  },
  bound(p, t) {
    if (t <= 0) return 0;
    const K = unitsPerMs(p);
    const T = unitsPerToken(p);
    // Timestamps a..a+t-1 span t-1 ms of refill after the first.
    return p.burst + ((t - 1) * K <= EXACT_PRODUCT ? Math.floor(((t - 1) * K) / T) : mulDivFloorBig(t - 1, K, T));
  },
  capacity(p) {
    return p.burst;
  },
};
