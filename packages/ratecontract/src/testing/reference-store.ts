import { releaseLease, type ConcurrencyState } from '../algorithms/concurrency.js';
import { runChain, runRefund, type StateAccess } from '../core/chain.js';
import type { Store, StoreOp, StoreOpResult } from '../core/store.js';

/**
 * The reference every store is held to: the pure algorithms under runChain /
 * runRefund over a plain Map, nothing else (no bounds, no overflow slots).
 */
export class ReferenceStore implements Store {
  readonly kind = 'reference';
  readonly #states = new Map<string, unknown>();

  #key(op: StoreOp): string {
    return `${op.spec.id}\u0000${op.key}`;
  }

  #access(ops: readonly StoreOp[]): StateAccess {
    return {
      get: (i) => this.#states.get(this.#key(ops[i] as StoreOp)),
      set: (i, state) => {
        const k = this.#key(ops[i] as StoreOp);
        if (state === undefined) this.#states.delete(k);
        else this.#states.set(k, state);
      },
    };
  }

  evaluateSync(ops: readonly StoreOp[], now: number): StoreOpResult[] {
    return runChain(ops, now, this.#access(ops));
  }

  evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    return Promise.resolve(this.evaluateSync(ops, now));
  }

  /** What `evaluateSync` would answer, changing nothing. */
  peekSync(ops: readonly StoreOp[], now: number): StoreOpResult[] {
    const access = this.#access(ops);
    return runChain(ops, now, { get: (i) => access.get(i), set: () => undefined });
  }

  peek(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    return Promise.resolve(this.peekSync(ops, now));
  }

  clear(ops: readonly StoreOp[]): Promise<void> {
    for (const op of ops) this.#states.delete(this.#key(op));
    return Promise.resolve();
  }

  refund(ops: readonly StoreOp[], now: number): Promise<void> {
    runRefund(ops, now, this.#access(ops));
    return Promise.resolve();
  }

  release(op: StoreOp): Promise<void> {
    if (op.leaseId === undefined) return Promise.resolve();
    const k = this.#key(op);
    const state = this.#states.get(k) as ConcurrencyState | undefined;
    if (state !== undefined) {
      const next = releaseLease(state, op.leaseId);
      if (next === undefined) this.#states.delete(k);
      else this.#states.set(k, next);
    }
    return Promise.resolve();
  }
}
