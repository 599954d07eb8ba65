import { failureReason, type StoreGuard } from './guard.js';
import { storeErrorChannel } from './events.js';
import type { Store, StoreOp } from './store.js';
import type { Figures } from '../algorithms/types.js';
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
          if (storeErrorChannel.hasSubscribers) storeErrorChannel.publish({ store: guard?.name ?? 'local', kind: store.kind, reason: failureReason(error), error, limits: [op.limit.name] });
        }
      }),
    );
  }
}

/**
 * The decision of a one-limit chain on an in-process store (the limiter's
 * fast path): built straight from the algorithm's figures, which it copies
 * (the caller reuses its `Figures`); `results` is materialised on first
 * read. No leases (concurrency takes the general path).
 */
export class SingleDecision implements Decision {
  static {
    // Resolving a promise with a decision looks up `then` on it (is it a
    // thenable?). Found here, on the prototype, as `undefined` (so still not
    // a thenable, and not an own key), the lookup ends before
    // Object.prototype: a few ns less per check on the fast path.
    Object.defineProperty(this.prototype, 'then', { value: undefined });
  }

  // `declare`: the constructor creates these (same order on every branch), no field definitions run before it.
  declare readonly allowed: boolean;
  declare readonly status: 200 | 429 | 503;
  declare readonly outcome: Outcome;
  declare readonly limit: string | undefined;
  declare readonly retryAfterMs: number;
  declare readonly delayMs: number;
  readonly #def: CompiledLimit;
  readonly #remaining: number;
  readonly #resetMs: number;
  /** The limit's own retryAfterMs (0 when it admitted); differs from `retryAfterMs` for a shadow limit. */
  readonly #limitRetryAfterMs: number;
  #results: readonly LimitResult[] | undefined;

  constructor(def: CompiledLimit, f: Readonly<Figures>) {
    this.#def = def;
    this.#remaining = f.remaining;
    this.#resetMs = f.resetMs;
    if (f.allowed) {
      this.allowed = true;
      this.status = 200;
      this.outcome = 'allowed';
      this.limit = undefined;
      this.retryAfterMs = 0;
      this.delayMs = f.delayMs;
      this.#limitRetryAfterMs = 0;
    } else if (def.shadow) {
      this.allowed = true;
      this.status = 200;
      this.outcome = 'shadow-rejected';
      this.limit = undefined;
      this.retryAfterMs = 0;
      this.delayMs = 0;
      this.#limitRetryAfterMs = f.retryAfterMs;
    } else {
      this.allowed = false;
      this.status = def.status;
      this.outcome = 'rejected';
      this.limit = def.name;
      this.retryAfterMs = f.retryAfterMs;
      this.delayMs = 0;
      this.#limitRetryAfterMs = f.retryAfterMs;
    }
  }

  get results(): readonly LimitResult[] {
    if (this.#results === undefined) {
      const def = this.#def;
      this.#results = [
        {
          name: def.name,
          allowed: this.outcome === 'allowed',
          remaining: this.#remaining,
          resetMs: this.#resetMs,
          retryAfterMs: this.#limitRetryAfterMs,
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
