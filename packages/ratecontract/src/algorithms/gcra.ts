import { bucketScale, EXACT_PRODUCT, mulDivFloorBig, unitsPerMs, unitsPerToken } from './scale.js';
import { ceilDiv, figures, intMod, resultOf, type Algorithm, type AlgorithmParams, type Figures } from './types.js';

/**
 * State of GCRA: the theoretical arrival time (TAT) as the rational
 * `t + f/K` ms (`0 <= f < K`), so an emission interval that is not a whole
 * number of ms accumulates no rounding error. K = N in the exact range
 * (`max(N, B) * W <= 2^49`); beyond it K is the scaled unit of
 * `bucketScale` (scale.ts).
 */
export interface GcraState {
  readonly t: number;
  readonly f: number;
}

/** `{ t, f }`, written into `into` when given. */
function put(into: GcraState | undefined, t: number, f: number): GcraState {
  if (into === undefined) return { t, f };
  const target = into as { t: number; f: number };
  target.t = t;
  target.f = f;
  return into;
}

function decideInto(s: GcraState | undefined, now: number, cost: number, p: AlgorithmParams, out: Figures, into: GcraState | undefined): GcraState | undefined {
  // Units: K per ms, T per unit of cost (exact range: K = N, T = W).
  let K = p.limit;
  let T = p.windowMs;
  if (Math.max(K, p.burst) * T > EXACT_PRODUCT) {
    const sc = bucketScale(p);
    K = sc.K;
    T = sc.T;
  }
  const tolerance = p.burst * T;
  // TAT relative to now, in units of 1/K ms, floored at now.
  const tat = s === undefined ? 0 : Math.max(0, (s.t - now) * K + s.f);
  const next = tat + cost * T;
  if (next <= tolerance) {
    out.allowed = true;
    out.remaining = Math.floor((tolerance - next) / T);
    out.resetMs = ceilDiv(next, K);
    out.retryAfterMs = 0;
    out.delayMs = 0;
    return next > 0 ? put(into, now + Math.floor(next / K), intMod(next, K)) : undefined;
  }
  out.allowed = false;
  out.remaining = Math.floor((tolerance - tat) / T);
  out.resetMs = ceilDiv(tat, K);
  out.retryAfterMs = cost > p.burst ? Infinity : ceilDiv(next - tolerance, K);
  out.delayMs = 0;
  return tat > 0 ? { t: now + Math.floor(tat / K), f: intMod(tat, K) } : undefined;
}

/**
 * GCRA (generic cell rate algorithm): keeps one timestamp, the TAT, advanced
 * by the emission interval T = W/N per unit of cost. A request is admitted if
 * `max(TAT, now) + cost*T - B*T <= now`.
 *
 * Bound: at most **B + t/T** cost in any interval of length t, the same
 * envelope as a token bucket of capacity B. Work is done relative to `now` in
 * units of 1/K ms, so all arithmetic is in integers and exact; beyond the
 * exact range the emission interval is rounded up to a whole unit (admit
 * less, wait longer; scale.ts). The earliest
 * admission time falls out of the arithmetic, which is why `retryAfterMs` is
 * exact. Pros: one stored time, O(1), exact retry. Cons: less intuitive to
 * explain than a bucket of tokens.
 */
export const gcra: Algorithm<GcraState> = {
  name: 'gcra',
  usesBurst: true,
  decide(s, now, cost, p) {
    const out = figures();
    return resultOf(out, decideInto(s, now, cost, p, out, undefined));
  },
  decideInto,
  refund(s, now, cost, p) {
    const K = unitsPerMs(p);
    const T = unitsPerToken(p);
    const tat = (s.t - now) * K + s.f - cost * T;
    return tat > 0 ? { t: now + Math.floor(tat / K), f: intMod(tat, K) } : undefined;
  },
  expiresAt(s) {
    return s.f > 0 ? s.t + 1 : s.t;
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
