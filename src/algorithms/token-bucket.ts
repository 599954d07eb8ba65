import { ceilDiv, type Algorithm } from './types.js';

/**
 * State of a token bucket: the tokens held, in units of 1/W token (so the
 * refill of N tokens per W ms is exactly N units per ms), and the time of
 * the last update.
 */
export interface TokenBucketState {
  readonly u: number;
  readonly t: number;
}

/**
 * Token bucket with continuous lazy refill: a bucket of B tokens refilled at
 * r = N/W tokens per ms, each request spends `cost` tokens.
 *
 * Bound: at most **B + r*t** cost in any interval of length t (B spent at
 * once, then the refill). Burst (B) and sustained rate (r) are independent
 * knobs. Integer arithmetic: tokens are kept in units of 1/W, so the refill
 * per ms is the integer N and nothing drifts. Pros: bursts are a policy, not
 * an accident; O(1) state. Cons: two numbers per key (GCRA needs one).
 */
export const tokenBucket: Algorithm<TokenBucketState> = {
  name: 'token-bucket',
  usesBurst: true,
  decide(s, now, cost, p) {
    const W = p.windowMs;
    const N = p.limit;
    const cap = p.burst * W;
    const units = s === undefined ? cap : Math.min(cap, s.u + Math.max(0, now - s.t) * N);
    const need = cost * W;
    if (units >= need) {
      const left = units - need;
      return {
        allowed: true,
        state: left < cap ? { u: left, t: now } : undefined,
        remaining: Math.floor(left / W),
        resetMs: ceilDiv(cap - left, N),
        retryAfterMs: 0,
        delayMs: 0,
      };
    }
    return {
      allowed: false,
      state: units < cap ? { u: units, t: now } : undefined,
      remaining: Math.floor(units / W),
      resetMs: ceilDiv(cap - units, N),
      retryAfterMs: cost > p.burst ? Infinity : ceilDiv(need - units, N),
      delayMs: 0,
    };
  },
  refund(s, now, cost, p) {
    const cap = p.burst * p.windowMs;
    const u = Math.min(cap, s.u + cost * p.windowMs);
    return u < cap ? { u, t: s.t } : undefined;
  },
  expiresAt(s, p) {
    return s.t + ceilDiv(p.burst * p.windowMs - s.u, p.limit);
  },
  bound(p, t) {
    if (t <= 0) return 0;
    // Timestamps a..a+t-1 span t-1 ms of refill after the first.
    return p.burst + Math.floor(((t - 1) * p.limit) / p.windowMs);
  },
  overwrite(into, from) {
    const target = into as { u: number; t: number };
    target.u = from.u;
    target.t = from.t;
    return true;
  },
  capacity(p) {
    return p.burst;
  },
};
