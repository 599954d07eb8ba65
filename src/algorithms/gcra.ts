import { ceilDiv, figures, intMod, resultOf, type Algorithm, type AlgorithmParams, type Figures } from './types.js';

/**
 * State of GCRA: the theoretical arrival time (TAT) as the exact rational
 * `t + f/N` ms (`0 <= f < N`), so an emission interval T = W/N that is not a
 * whole number of ms accumulates no rounding error.
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
  const W = p.windowMs;
  const N = p.limit;
  const tolerance = p.burst * W;
  // TAT relative to now, in units of 1/N ms, floored at now.
  const tat = s === undefined ? 0 : Math.max(0, (s.t - now) * N + s.f);
  const next = tat + cost * W;
  if (next <= tolerance) {
    out.allowed = true;
    out.remaining = Math.floor((tolerance - next) / W);
    out.resetMs = ceilDiv(next, N);
    out.retryAfterMs = 0;
    out.delayMs = 0;
    return next > 0 ? put(into, now + Math.floor(next / N), intMod(next, N)) : undefined;
  }
  out.allowed = false;
  out.remaining = Math.floor((tolerance - tat) / W);
  out.resetMs = ceilDiv(tat, N);
  out.retryAfterMs = cost > p.burst ? Infinity : ceilDiv(next - tolerance, N);
  out.delayMs = 0;
  return tat > 0 ? { t: now + Math.floor(tat / N), f: intMod(tat, N) } : undefined;
}

/**
 * GCRA (generic cell rate algorithm): keeps one timestamp, the TAT, advanced
 * by the emission interval T = W/N per unit of cost. A request is admitted if
 * `max(TAT, now) + cost*T - B*T <= now`.
 *
 * Bound: at most **B + t/T** cost in any interval of length t, the same
 * envelope as a token bucket of capacity B. Work is done relative to `now` in
 * units of 1/N ms, so all arithmetic is in integers and exact. The earliest
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
    const tat = (s.t - now) * p.limit + s.f - cost * p.windowMs;
    return tat > 0 ? { t: now + Math.floor(tat / p.limit), f: intMod(tat, p.limit) } : undefined;
  },
  expiresAt(s) {
    return s.f > 0 ? s.t + 1 : s.t;
  },
  bound(p, t) {
    if (t <= 0) return 0;
    return p.burst + Math.floor(((t - 1) * p.limit) / p.windowMs);
  },
  capacity(p) {
    return p.burst;
  },
};
