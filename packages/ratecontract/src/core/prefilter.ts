import { algorithms } from '../algorithms/registry.js';
import type { Algorithm } from '../algorithms/types.js';
import type { ClockOffset } from './clock-offset.js';
import type { StoreOp, StoreOpResult } from './store.js';
import type { CompiledLimit } from './types.js';

/** A limit with a local pre-filter: this process's own admissions, replayed at the store's decision times. */
interface PreFilterLimit {
  readonly algo: Algorithm<unknown>;
  readonly maxKeys: number;
  readonly states: Map<string, unknown>;
}

/** The result of an op the store was never asked about: allowed, nothing consumed, the limit's own figures. */
export const NOT_CONSULTED = (limit: CompiledLimit): StoreOpResult => ({ allowed: true, consumed: false, remaining: limit.params.limit, resetMs: 0, retryAfterMs: 0, delayMs: 0 });

/**
 * The pre-filter mode of two-tier limits (`tier: { mode: 'pre-filter' }`;
 * docs/limits.md, "Two-tier limits"): a local copy of the limit at N, fed
 * with this process's admissions at the store's own decision times, refuses
 * a check before any store call when it rejects it at the latest instant
 * the store's clock can show. It holds a subset of what the shared state
 * counts, and every supported algorithm rejects more with more counted and
 * less as time passes, so its rejection implies the shared one.
 */
export class PreFilter {
  readonly #filters = new Map<string, PreFilterLimit>();
  readonly #offset: ClockOffset;

  constructor(offset: ClockOffset) {
    this.#offset = offset;
  }

  /** Filters `limit` (a limit with `tier: { mode: 'pre-filter' }`). */
  add(limit: CompiledLimit, maxKeys: number): void {
    this.#filters.set(limit.id, { algo: algorithms[limit.algorithm], maxKeys, states: new Map() });
  }

  /**
   * When an enforcing op with a local copy rejects at the latest instant
   * the store's clock can show, the chain's results with that op rejected
   * (unless an op counts rejected attempts, which only the store can
   * count); `undefined` when the store must decide.
   */
  refuse(ops: readonly StoreOp[], now: number): StoreOpResult[] | undefined {
    if (this.#filters.size === 0 || !this.#offset.known) return undefined;
    let out: StoreOpResult[] | undefined;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as StoreOp;
      if (op.spec.countRejected) return undefined;
      const f = this.#filters.get(op.spec.id);
      if (f === undefined || op.spec.shadow) continue;
      const state = f.states.get(op.key);
      if (state === undefined) continue;
      const p = op.spec.params;
      const hi = now + this.#offset.high(now);
      if (f.algo.decide(state, hi, op.cost, p).allowed) continue;
      // Never shorter than the true wait: the latest the store can admit it is the wait from the fullest state it can be in.
      const lo = now + this.#offset.low(now);
      const worst = f.algo.decide(f.algo.decide(undefined, hi, f.algo.capacity(p), p).state, hi, op.cost, p).retryAfterMs;
      const retryAfterMs = worst === Infinity ? Infinity : Math.ceil(hi + worst - lo);
      out ??= ops.map((o) => NOT_CONSULTED(o.spec));
      out[i] = { allowed: false, consumed: false, remaining: 0, resetMs: retryAfterMs === Infinity ? p.windowMs : retryAfterMs, retryAfterMs, delayMs: 0 };
    }
    return out;
  }

  /** Records the admissions of pre-filtered limits at the store's decision time. */
  record(ops: readonly StoreOp[], results: readonly StoreOpResult[], now: number): void {
    if (this.#filters.size === 0) return;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as StoreOp;
      const r = results[i];
      const f = this.#filters.get(op.spec.id);
      if (f === undefined || r?.consumed !== true) continue;
      const at = r.decidedAt ?? now;
      const states = f.states;
      const before = states.get(op.key);
      const next = f.algo.decide(before, at, op.cost, op.spec.params);
      // A local copy that cannot take what the store admitted (clock disorder) forgets the key: it then refuses less, never more.
      states.delete(op.key);
      if (!next.allowed || next.state === undefined) continue;
      states.set(op.key, next.state);
      if (states.size > f.maxKeys) states.delete(states.keys().next().value as string);
    }
  }
}
