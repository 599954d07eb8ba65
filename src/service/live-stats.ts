// stand-in: replaced by feat/metrics
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { CHANNELS, type Decision, type Limiter } from '../index.js';

/** Per-limit decision counts for the admin page (stand-in: totals per outcome, and store health). */
export class LiveStats {
  readonly #counts = new Map<string, Record<string, number>>();
  readonly #onDecision = (message: unknown): void => {
    const { decision } = message as { decision: Decision };
    const name = decision.limit ?? '(allowed)';
    const c = this.#counts.get(name) ?? {};
    c[decision.outcome] = (c[decision.outcome] ?? 0) + 1;
    this.#counts.set(name, c);
  };

  constructor(options?: { windowMs?: number }) {
    void options;
    subscribe(CHANNELS.decision, this.#onDecision);
  }

  snapshot(limiters: Iterable<{ name: string; limiter: Limiter }>): unknown {
    const stores: Record<string, unknown> = {};
    for (const { limiter } of limiters) Object.assign(stores, limiter.storeHealth());
    return { counts: Object.fromEntries(this.#counts), stores };
  }

  close(): void {
    unsubscribe(CHANNELS.decision, this.#onDecision);
  }
}
