import type { BreakerState, StoreHealth } from '../core/store-circuit.js';
import type { Limiter } from '../core/limiter.js';

const SEVERITY: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 };

/**
 * Store health across limiters, by store name. Each limiter guards its
 * stores with breakers of its own (a service builds one limiter per route
 * over shared stores), so a store is reported at its worst: the most open
 * breaker state, the highest failure rate, ready only if every limiter has
 * seen it ready; calls and calls in flight add up.
 */
export function mergedStoreHealth(limiters: Iterable<Limiter>): Map<string, StoreHealth> {
  const out = new Map<string, StoreHealth>();
  for (const limiter of limiters) {
    for (const [name, h] of Object.entries(limiter.storeHealth())) {
      const seen = out.get(name);
      if (seen === undefined) {
        out.set(name, h);
        continue;
      }
      out.set(name, {
        state: SEVERITY[h.state] > SEVERITY[seen.state] ? h.state : seen.state,
        failureRate: Math.max(seen.failureRate, h.failureRate),
        calls: seen.calls + h.calls,
        inFlight: seen.inFlight + h.inFlight,
        ready: seen.ready && h.ready,
      });
    }
  }
  return out;
}
