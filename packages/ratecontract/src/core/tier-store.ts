import { algorithms } from '../algorithms/registry.js';
import type { Algorithm } from '../algorithms/types.js';
import { Allotments, SWEEP_KEYS_PER_TICK } from './allotment.js';
import type { Clock } from './clock.js';
import { ClockOffset } from './clock-offset.js';
import { PreFilter } from './prefilter.js';
import type { Store, StoreOp, StoreOpResult } from './store.js';
import type { CompiledLimit } from './types.js';

export { SWEEP_KEYS_PER_TICK } from './allotment.js';

/**
 * The two-tier modes of a store's limits (`tier` on a limit; docs/limits.md,
 * "Two-tier limits"), as a store in front of the shared one: the wiring
 * only. A chain goes through the pre-filter (prefilter.ts: refused before
 * any store call?), then the allotments (allotment.ts: decided on local
 * quota, or with draws), and every call that reaches the shared store
 * teaches the clock offset (clock-offset.ts) and feeds the pre-filter.
 */
export class TierStore implements Store {
  readonly kind: string;
  readonly deadlineMs: number | undefined;
  readonly maxInFlight: number | undefined;
  readonly startupWaitMs: number | undefined;
  readonly breaker: Store['breaker'];
  readonly deadConnectionMs: Store['deadConnectionMs'];
  readonly ready?: () => Promise<void>;
  readonly reconnect?: (node?: string) => boolean;
  readonly heartbeat?: (instanceId: string, ttlMs: number, now: number) => Promise<number>;
  readonly #inner: Store;
  readonly #clock: Clock;
  readonly #offset = new ClockOffset();
  readonly #preFilter = new PreFilter(this.#offset);
  readonly #allotments: Allotments;

  /**
   * `replicas` is k (the limiter's replica count; bucket allotments need a
   * configured number). `limits` are the store's limits; those without
   * `tier` pass through unchanged.
   */
  constructor(inner: Store, limits: readonly CompiledLimit[], clock: Clock, replicas: number | 'discover', currentReplicas: () => number, indexes?: readonly number[]) {
    this.#inner = inner;
    this.kind = inner.kind;
    this.deadlineMs = inner.deadlineMs;
    this.maxInFlight = inner.maxInFlight;
    this.startupWaitMs = inner.startupWaitMs;
    this.breaker = inner.breaker;
    this.deadConnectionMs = inner.deadConnectionMs;
    if (inner.ready !== undefined) this.ready = inner.ready.bind(inner);
    if (inner.reconnect !== undefined) this.reconnect = inner.reconnect.bind(inner);
    if (inner.heartbeat !== undefined) this.heartbeat = inner.heartbeat.bind(inner);
    this.#clock = clock;
    this.#allotments = new Allotments(inner, clock, currentReplicas, (ops, now) => this.#shared(ops, now));
    for (const [i, l] of limits.entries()) {
      const tier = l.tier;
      if (tier === undefined) continue;
      if (tier.mode === 'pre-filter') {
        this.#preFilter.add(l, tier.maxKeys);
        continue;
      }
      const algo: Algorithm<unknown> = algorithms[l.algorithm];
      this.#allotments.add(l, tier, algo, replicas, `limits[${indexes?.[i] ?? i}].tier`);
    }
  }

  /** Whether any of `limits` has a two-tier mode (a store needs this wrapper). */
  static wanted(limits: readonly CompiledLimit[]): boolean {
    return limits.some((l) => l.tier !== undefined);
  }

  /**
   * One tick of the allotment sweep (a timer calls it; exposed for tests
   * that drive a manual clock): gives back up to `maxKeys` keys' ended
   * allotments. Returns how many it gave back.
   */
  sweep(maxKeys = SWEEP_KEYS_PER_TICK): number {
    return this.#allotments.sweep(maxKeys);
  }

  async evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    const n = ops.length;
    if (n === 0) return [];
    const refused = this.#preFilter.refuse(ops, now);
    if (refused !== undefined) return refused;
    return this.#allotments.evaluate(ops, now, false);
  }

  /** Sends ops to the shared store, learns the clock offset, and records the pre-filtered admissions. */
  async #shared(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    const res = await this.#inner.evaluate(ops, now);
    const received = this.#clock.now();
    const decidedAt = res[0]?.decidedAt ?? now;
    // The store decided after the check's `now` (limiter time): server time, or that very `now` for a store that
    // decides at the limiter's clock, whose offset is then 0. Either way the offset is at most decidedAt - now.
    this.#offset.sample(now, received, decidedAt);
    this.#preFilter.record(ops, res, now);
    return res;
  }

  async refund(ops: readonly StoreOp[], now: number): Promise<void> {
    const through = this.#allotments.refund(ops);
    if (through.length > 0) await this.#inner.refund(through, now);
  }

  release(op: StoreOp, now: number): Promise<void> {
    return this.#inner.release(op, now);
  }

  /**
   * Stops the sweep and gives every unspent allotment back; later draws give
   * theirs back at once. Resolves when every give-back (these, and those
   * already in flight) has settled: the units are back in the shared store,
   * or the store failed and they expire with the state. Safe to call again:
   * each call resolves once nothing is left in flight.
   */
  close(): Promise<void> {
    return this.#allotments.close();
  }
}
