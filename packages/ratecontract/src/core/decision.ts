import { failureReason, type StoreCircuit } from './store-circuit.js';
import { storeErrorChannel } from './events.js';
import type { Store, StoreOp } from './store.js';
import type { Decision, LimitResult, Outcome } from './types.js';

/** A lease to free on `decision.release()`: through the store's circuit (deadline, breaker), or on the local fallback store. */
export interface HeldLease {
  readonly store: Store;
  readonly circuit: StoreCircuit | undefined;
  readonly op: StoreOp;
  readonly now: number;
}

/** The decision object `check()` resolves with, whatever path made it. */
export class CheckDecision implements Decision {
  static {
    // Resolving a promise with a decision looks up `then` on it (is it a
    // thenable?). Found here, on the prototype, as `undefined` (so still not
    // a thenable, and not an own key), the lookup ends before
    // Object.prototype: a few ns less per check.
    Object.defineProperty(this.prototype, 'then', { value: undefined });
  }

  readonly allowed: boolean;
  readonly status: 200 | 403 | 429 | 503;
  readonly outcome: Outcome;
  readonly limitName: string | undefined;
  readonly retryAfterMs: number;
  readonly delayMs: number;
  readonly results: readonly LimitResult[];
  #leases: HeldLease[] | undefined;
  /** Each limit's raw key, when the check was asked for them (partition keys); private, so no path's decision shows it. */
  readonly #keys: ReadonlyArray<string | undefined> | undefined;

  /** The raw keys `check` was asked to keep (`WANT_KEYS`), else `undefined`. */
  static keysOf(decision: Decision): ReadonlyArray<string | undefined> | undefined {
    return decision instanceof CheckDecision ? decision.#keys : undefined;
  }
  #refunds: HeldLease[] | undefined;

  constructor(
    allowed: boolean,
    status: 200 | 403 | 429 | 503,
    outcome: Outcome,
    limitName: string | undefined,
    retryAfterMs: number,
    delayMs: number,
    results: readonly LimitResult[],
    leases: HeldLease[] | undefined,
    refunds?: HeldLease[],
    keys?: ReadonlyArray<string | undefined>,
  ) {
    this.allowed = allowed;
    this.status = status;
    this.outcome = outcome;
    this.limitName = limitName;
    this.retryAfterMs = retryAfterMs;
    this.delayMs = delayMs;
    this.results = results;
    this.#leases = leases;
    this.#keys = keys;
    this.#refunds = refunds;
  }

  async settle(outcome: 'success' | 'failure' | { readonly status: number }): Promise<void> {
    const refunds = this.#refunds;
    if (refunds === undefined) return;
    this.#refunds = undefined;
    const give = refunds.filter(({ op }) => (outcome === 'success' ? true : outcome === 'failure' ? false : !op.spec.isFailure(outcome.status)));
    await Promise.all(
      give.map(async ({ store, circuit, op, now }) => {
        try {
          // At the check's `now`: the refund undoes exactly what that check consumed; state that has since expired or rolled over is left as it is.
          if (circuit === undefined) await store.refund([op], now);
          else await circuit.run(() => store.refund([op], now), now);
        } catch (error) {
          if (storeErrorChannel.hasSubscribers) storeErrorChannel.publish({ store: circuit?.name ?? 'local', kind: store.kind, reason: failureReason(error), error, limits: [op.spec.name] });
        }
      }),
    );
  }

  async release(): Promise<void> {
    const leases = this.#leases;
    if (leases === undefined) return;
    this.#leases = undefined;
    await Promise.all(
      leases.map(async ({ store, circuit, op, now }) => {
        try {
          if (circuit === undefined) await store.release(op, now);
          else await circuit.run(() => store.release(op, now), now);
        } catch (error) {
          // The lease expires on its own after the limit's window.
          if (storeErrorChannel.hasSubscribers) storeErrorChannel.publish({ store: circuit?.name ?? 'local', kind: store.kind, reason: failureReason(error), error, limits: [op.spec.name] });
        }
      }),
    );
  }
}
