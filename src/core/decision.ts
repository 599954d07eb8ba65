import type { StoreGuard } from './guard.js';
import { storeErrorChannel } from './events.js';
import type { Store, StoreOp } from './store.js';
import type { AlgorithmResult } from '../algorithms/types.js';
import type { CompiledLimit, Decision, LimitResult, Outcome } from './types.js';

/** A lease to free on `decision.release()`: through the store's guard (deadline, breaker), or on the local fallback store. */
export interface Lease {
  readonly store: Store;
  readonly guard: StoreGuard | undefined;
  readonly op: StoreOp;
  readonly now: number;
}

/** The decision object `check()` resolves with. */
export class CheckDecision implements Decision {
  readonly allowed: boolean;
  readonly status: 200 | 429 | 503;
  readonly outcome: Outcome;
  readonly limit: string | undefined;
  readonly retryAfterMs: number;
  readonly delayMs: number;
  readonly results: readonly LimitResult[];
  #leases: Lease[] | undefined;

  constructor(
    allowed: boolean,
    status: 200 | 429 | 503,
    outcome: Outcome,
    limit: string | undefined,
    retryAfterMs: number,
    delayMs: number,
    results: readonly LimitResult[],
    leases: Lease[] | undefined,
  ) {
    this.allowed = allowed;
    this.status = status;
    this.outcome = outcome;
    this.limit = limit;
    this.retryAfterMs = retryAfterMs;
    this.delayMs = delayMs;
    this.results = results;
    this.#leases = leases;
  }

  async release(): Promise<void> {
    const leases = this.#leases;
    if (leases === undefined) return;
    this.#leases = undefined;
    await Promise.all(
      leases.map(async ({ store, guard, op, now }) => {
        try {
          if (guard === undefined) await store.release(op, now);
          else await guard.run(() => store.release(op, now), now);
        } catch (error) {
          // The lease expires on its own after the limit's window.
          if (storeErrorChannel.hasSubscribers) storeErrorChannel.publish({ store: guard?.name ?? 'local', kind: store.kind, error, limits: [op.limit.name] });
        }
      }),
    );
  }
}

/**
 * The decision of a one-limit chain on an in-process store (the limiter's
 * fast path): built straight from the algorithm's result; `results` is
 * materialised on first read. No leases (concurrency takes the general path).
 */
export class SingleDecision implements Decision {
  readonly allowed: boolean;
  readonly status: 200 | 429 | 503;
  readonly outcome: Outcome;
  readonly limit: string | undefined;
  readonly retryAfterMs: number;
  readonly delayMs: number;
  readonly #def: CompiledLimit;
  readonly #r: AlgorithmResult<unknown>;
  #results: readonly LimitResult[] | undefined;

  constructor(def: CompiledLimit, r: AlgorithmResult<unknown>) {
    this.#def = def;
    this.#r = r;
    if (r.allowed) {
      this.allowed = true;
      this.status = 200;
      this.outcome = 'allowed';
      this.limit = undefined;
      this.retryAfterMs = 0;
      this.delayMs = r.delayMs;
    } else if (def.shadow) {
      this.allowed = true;
      this.status = 200;
      this.outcome = 'shadow-rejected';
      this.limit = undefined;
      this.retryAfterMs = 0;
      this.delayMs = 0;
    } else {
      this.allowed = false;
      this.status = def.status;
      this.outcome = 'rejected';
      this.limit = def.name;
      this.retryAfterMs = r.retryAfterMs;
      this.delayMs = 0;
    }
  }

  get results(): readonly LimitResult[] {
    if (this.#results === undefined) {
      const def = this.#def;
      const r = this.#r;
      this.#results = [
        {
          name: def.name,
          allowed: r.allowed,
          remaining: r.remaining,
          resetMs: r.resetMs,
          retryAfterMs: r.allowed ? 0 : r.retryAfterMs,
          limit: def.params.limit,
          windowMs: def.params.windowMs,
          source: 'store',
          shadow: def.shadow,
          purpose: def.purpose,
          failMode: undefined,
        },
      ];
    }
    return this.#results;
  }

  release(): Promise<void> {
    return Promise.resolve();
  }
}
