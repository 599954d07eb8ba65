import { algorithms } from '../algorithms/registry.js';
import type { StoreOp, StoreOpResult } from './store.js';

/** Reads and writes the state of the op at index `i`; a store implements these over its own memory. */
export interface StateAccess {
  get(i: number): unknown;
  set(i: number, state: unknown): void;
}

/**
 * The chain semantics, shared by every in-process store (the Lua chain script
 * is its twin):
 * 1. decide every op against the same `now`;
 * 2. the chain admits iff every enforcing (non-shadow) op admits;
 * 3. an op consumes iff it admits, has cost, and either the chain admits or
 *    its limit counts rejected attempts;
 * 4. an op that admits but does not consume reports the unconsumed figures
 *    (a cost-0 peek).
 */
export function runChain(ops: readonly StoreOp[], now: number, access: StateAccess): StoreOpResult[] {
  const n = ops.length;
  const states: unknown[] = new Array<unknown>(n);
  const decided = new Array<ReturnType<(typeof algorithms)['gcra']['decide']>>(n);
  let chainAllowed = true;
  for (let i = 0; i < n; i++) {
    const op = ops[i] as StoreOp;
    const algo = algorithms[op.spec.algorithm];
    const state = access.get(i);
    states[i] = state;
    const r = algo.decide(state, now, op.cost, op.spec.params, op.leaseId);
    decided[i] = r;
    if (!r.allowed && !op.spec.shadow) chainAllowed = false;
  }
  const out = new Array<StoreOpResult>(n);
  for (let i = 0; i < n; i++) {
    const op = ops[i] as StoreOp;
    const r = decided[i] as (typeof decided)[number];
    if (r.allowed && op.cost > 0 && (chainAllowed || op.spec.countRejected)) {
      access.set(i, r.state);
      out[i] = { allowed: true, consumed: true, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: 0, delayMs: r.delayMs };
    } else if (r.allowed) {
      const peek = op.cost > 0 ? algorithms[op.spec.algorithm].decide(states[i], now, 0, op.spec.params) : r;
      out[i] = { allowed: true, consumed: false, remaining: peek.remaining, resetMs: peek.resetMs, retryAfterMs: 0, delayMs: 0 };
    } else {
      out[i] = { allowed: false, consumed: false, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, delayMs: 0 };
    }
  }
  return out;
}

/** Refunds consumed ops (the twin of the Lua refund script). */
export function runRefund(ops: readonly StoreOp[], now: number, access: StateAccess): void {
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as StoreOp;
    const state = access.get(i);
    if (state === undefined) continue;
    access.set(i, algorithms[op.spec.algorithm].refund(state, now, op.cost, op.spec.params, op.leaseId));
  }
}
