import { intoFigures, type Algorithm } from './types.js';

/** One lease: who holds it, until when, and for how much cost. */
export interface Lease {
  readonly id: string;
  readonly exp: number;
  readonly cost: number;
}

/** State of a concurrency limit: the live leases. */
export type ConcurrencyState = readonly Lease[];

/**
 * Concurrency: at most N cost in flight. A check takes a lease that lasts W ms
 * (the limit's `window`) unless released first (`decision.release()`), so a
 * holder that crashes cannot leak capacity for longer than W.
 *
 * Bound: at most **N in flight** at any instant. `retryAfterMs` is the time
 * at which enough leases expire if none is released earlier (releases only
 * make it sooner). Pros: protects resources whose cost is duration, not
 * count. Cons: a lease per request in flight; pick W above the slowest
 * legitimate request.
 */
export const concurrency: Algorithm<ConcurrencyState> = {
  name: 'concurrency',
  usesBurst: false,
  decide(s, now, cost, p, leaseId) {
    const N = p.limit;
    const live = s === undefined ? [] : s.filter((l) => l.exp > now);
    let used = 0;
    let last = now;
    for (const l of live) {
      used += l.cost;
      if (l.exp > last) last = l.exp;
    }
    if (used + cost <= N) {
      if (cost > 0) {
        live.push({ id: leaseId ?? '', exp: now + p.windowMs, cost });
        last = now + p.windowMs;
      }
      return {
        allowed: true,
        state: live.length > 0 ? live : undefined,
        remaining: N - used - cost,
        resetMs: last - now,
        retryAfterMs: 0,
        delayMs: 0,
      };
    }
    let retryAfterMs = Infinity;
    if (cost <= N) {
      const byExpiry = live.slice().sort((a, b) => a.exp - b.exp);
      const need = used + cost - N;
      let freed = 0;
      for (const l of byExpiry) {
        freed += l.cost;
        if (freed >= need) {
          retryAfterMs = l.exp - now;
          break;
        }
      }
    }
    return {
      allowed: false,
      state: live.length > 0 ? live : undefined,
      remaining: N - used,
      resetMs: last - now,
      retryAfterMs,
      delayMs: 0,
    };
  },
  decideInto(s, now, cost, p, out, _into, leaseId) {
    // Immutable state: the decision is `decide`'s, figures copied out.
    return intoFigures(this.decide(s, now, cost, p, leaseId), out);
  },
  refund(s, _now, _cost, _p, leaseId) {
    return releaseLease(s, leaseId ?? '');
  },
  expiresAt(s) {
    let last = 0;
    for (const l of s) if (l.exp > last) last = l.exp;
    return last;
  },
  bound(p) {
    return p.limit;
  },
  capacity(p) {
    return p.limit;
  },
};

/** Removes the lease `id` (no-op if it is gone or expired). */
export function releaseLease(s: ConcurrencyState, id: string): ConcurrencyState | undefined {
  const left = s.filter((l) => l.id !== id);
  return left.length > 0 ? left : undefined;
}
