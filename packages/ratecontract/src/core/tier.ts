import { algorithms } from '../algorithms/registry.js';
import type { Algorithm, AlgorithmParams } from '../algorithms/types.js';
import type { Clock } from './clock.js';
import { ConfigError } from './errors.js';
import { storeErrorChannel } from './events.js';
import type { Store, StoreOp, StoreOpResult } from './store.js';
import type { CompiledLimit, CompiledTier } from './types.js';

type LeaseTier = Extract<CompiledTier, { mode: 'lease' }>;

/** Quota one process holds for one key: units taken from the shared state, spent locally until `expiresAt`. */
interface Lease {
  units: number;
  /** Limiter-clock ms after which the lease is not spent from (lifetime, and for windows the window's end). */
  readonly expiresAt: number;
  /** The shared remaining the draw reported (after it). */
  readonly shared: number;
  /** Limiter-clock ms at which the shared state is empty again, as the draw reported. */
  readonly resetAt: number;
  /** The store-clock instant of the draw: unspent units go back at it, into the window they were counted in. */
  readonly decidedAt: number;
}

interface LeaseKey {
  lease: Lease | undefined;
  /**
   * A lease draw in flight for this key. Checks that find one make exact
   * shared checks meanwhile (cost only, nothing left over), so a process
   * never holds more than `maxLease` unspent units of a key.
   */
  pending: boolean;
  /** The shared remaining the last draw reported, for the next lease's size. */
  shared: number | undefined;
}

/** A limit in lease mode, with what its draws need. */
interface LeaseLimit {
  readonly tier: LeaseTier;
  readonly algo: Algorithm<unknown>;
  /** The limit the draws are made with (buckets: the shared bucket's reduced capacity). */
  readonly shared: CompiledLimit;
  readonly maxLease: number;
  readonly windowed: boolean;
  readonly keys: Map<string, LeaseKey>;
}

/** A limit with a local pre-filter: this process's own admissions, replayed at the store's decision times. */
interface PreFilterLimit {
  readonly algo: Algorithm<unknown>;
  readonly maxKeys: number;
  readonly states: Map<string, unknown>;
}

/** One lease op of a check: decided on the local lease, or by a draw from the shared state. */
interface Planned {
  readonly index: number;
  readonly lease: LeaseLimit;
  readonly state: LeaseKey;
  /** Units reserved on the local lease (0: needs a draw). */
  reserved: number;
  /**
   * The lease they were reserved on: it may end while the check waits for
   * the store (the sweep or another check gives it back, or a new one takes
   * its place), and the check still answers from the lease it spent.
   */
  from: Lease | undefined;
  /** Draw size (0: none). */
  draw: number;
}

/**
 * The lease sweep: every `clamp(shortest leaseLifetime, 50 ms, 1 s)` an
 * unref'd timer looks at up to SWEEP_KEYS_PER_TICK keys (resuming where the
 * last tick stopped) and gives back the leases that have ended, so the
 * units of a key that is never checked again go back without waiting for
 * its eviction.
 */
export const SWEEP_KEYS_PER_TICK = 256;
const SWEEP_MIN_MS = 50;
const SWEEP_MAX_MS = 1000;

const NOT_CONSULTED = (limit: CompiledLimit): StoreOpResult => ({ allowed: true, consumed: false, remaining: limit.params.limit, resetMs: 0, retryAfterMs: 0, delayMs: 0 });

/**
 * Bounds the difference between the store's clock (Redis server time) and
 * the limiter's, from the decision times stores report: a call sent at `s`
 * and answered at `r` that the store decided at `d` says the offset lies
 * in `[d - r, d - s]`. The tightest bounds seen are kept, loosened by 100
 * ppm of the time since (clock rates drift), plus 1 ms.
 */
class OffsetBounds {
  #hi = Infinity;
  #hiAt = 0;
  #lo = -Infinity;
  #loAt = 0;

  sample(sent: number, received: number, decidedAt: number): void {
    const hi = decidedAt - sent;
    const lo = decidedAt - received;
    if (hi <= this.high(sent)) {
      this.#hi = hi;
      this.#hiAt = sent;
    }
    if (lo >= this.low(received)) {
      this.#lo = lo;
      this.#loAt = received;
    }
  }

  /** An upper bound of (store clock - limiter clock) at limiter time `now`. */
  high(now: number): number {
    return this.#hi + Math.abs(now - this.#hiAt) / 10_000 + 1;
  }

  /** A lower bound of (store clock - limiter clock) at limiter time `now`. */
  low(now: number): number {
    return this.#lo - Math.abs(now - this.#loAt) / 10_000 - 1;
  }

  get known(): boolean {
    return this.#hi !== Infinity && this.#lo !== -Infinity;
  }
}

/**
 * The two-tier modes of a store's limits (`tier` on a limit; docs/limits.md,
 * "Two-tier limits"), as a store in front of the shared one:
 *
 * - **lease**: a check is decided on this process's lease of the key's
 *   quota; when the lease is spent or has expired, the check draws a new one
 *   (an op of the lease's size in the same chain call), sized
 *   `remaining / 2k` between the cost and `maxLease`, so near the limit every
 *   check is an exact shared check. Every local admission spends a unit the
 *   shared state counted, in the same aligned window (fixed-window,
 *   sliding-window); bucket draws come from a shared bucket of
 *   `burst - k x maxLease`, so the units leases hold never lift the bucket
 *   above `burst`. Unspent units go back when a lease expires or the limiter
 *   closes.
 * - **pre-filter**: a local copy of the limit at N, fed with this process's
 *   admissions at the store's own decision times, refuses a check before
 *   any store call when it rejects it at the latest instant the store's
 *   clock can show. It holds a subset of what the shared state counts, and
 *   every supported algorithm rejects more with more counted and less as
 *   time passes, so its rejection implies the shared one.
 */
export class TierStore implements Store {
  readonly kind: string;
  readonly deadlineMs: number | undefined;
  readonly maxInFlight: number | undefined;
  readonly startupWaitMs: number | undefined;
  readonly breaker: Store['breaker'];
  readonly deadConnectionMs: Store['deadConnectionMs'];
  readonly ready?: () => Promise<void>;
  readonly reconnect?: () => boolean;
  readonly heartbeat?: (instanceId: string, ttlMs: number, now: number) => Promise<number>;
  readonly #inner: Store;
  readonly #clock: Clock;
  readonly #replicas: () => number;
  readonly #leases = new Map<string, LeaseLimit>();
  readonly #filters = new Map<string, PreFilterLimit>();
  readonly #offset = new OffsetBounds();
  #closed = false;
  /** Gives-back in flight (refund calls), so that close() can wait for them. */
  readonly #returning = new Set<Promise<void>>();
  #sweepTimer: ReturnType<typeof setInterval> | undefined;
  /** Where the sweep resumes: a live iterator over each lease limit's keys. */
  #sweepAt: { lease: LeaseLimit; keys: Iterator<[string, LeaseKey]> } | undefined;
  #sweepOrder: LeaseLimit[] = [];

  /**
   * `replicas` is k (the limiter's replica count; bucket leases need a
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
    this.#replicas = currentReplicas;
    for (const [i, l] of limits.entries()) {
      const tier = l.tier;
      if (tier === undefined) continue;
      const algo: Algorithm<unknown> = algorithms[l.algorithm];
      if (tier.mode === 'pre-filter') {
        this.#filters.set(l.id, { algo, maxKeys: tier.maxKeys, states: new Map() });
        continue;
      }
      this.#leases.set(l.id, leaseLimit(l, tier, algo, replicas, `limits[${indexes?.[i] ?? i}].tier`));
    }
    this.#sweepOrder = [...this.#leases.values()];
  }

  /**
   * Starts the sweep timer with the first lease (not at construction: a
   * limiter built at module scope starts no timer, which some runtimes
   * refuse there). The timer holds the store weakly, so a limiter dropped
   * without close() is still collected, and is unref'd where the runtime
   * has unref.
   */
  #startSweep(): void {
    if (this.#sweepTimer !== undefined || this.#closed) return;
    const shortest = Math.min(...this.#sweepOrder.map((l) => l.tier.leaseLifetimeMs));
    const self = new WeakRef(this);
    const timer = setInterval(() => {
      const store = self.deref();
      if (store === undefined) clearInterval(timer);
      else store.sweep();
    }, Math.min(SWEEP_MAX_MS, Math.max(SWEEP_MIN_MS, shortest)));
    (timer as { unref?: () => void }).unref?.();
    this.#sweepTimer = timer;
  }

  /**
   * One tick of the lease sweep (the timer calls it; exposed for tests that
   * drive a manual clock): looks at up to `maxKeys` keys, resuming where the
   * last tick stopped, gives back every lease among them that has ended at
   * the limiter clock's now, and forgets those keys. Returns how many leases
   * it gave back.
   */
  sweep(maxKeys = SWEEP_KEYS_PER_TICK): number {
    const order = this.#sweepOrder;
    if (order.length === 0) return 0;
    const at = this.#clock.now();
    let looked = 0;
    let returned = 0;
    let limitsDone = 0;
    while (looked < maxKeys && limitsDone < order.length) {
      let cursor = this.#sweepAt;
      if (cursor === undefined) {
        const lease = order[0] as LeaseLimit;
        cursor = this.#sweepAt = { lease, keys: lease.keys.entries() };
      }
      const step = cursor.keys.next();
      if (step.done === true) {
        // This limit's keys are done: the next limit, from its first key.
        const next = order[(order.indexOf(cursor.lease) + 1) % order.length] as LeaseLimit;
        this.#sweepAt = { lease: next, keys: next.keys.entries() };
        limitsDone++;
        continue;
      }
      looked++;
      const [key, state] = step.value;
      const l = state.lease;
      if (l === undefined || state.pending || at < l.expiresAt) continue;
      state.lease = undefined;
      cursor.lease.keys.delete(key);
      if (l.units > 0) returned++;
      void this.#giveBack(cursor.lease, key, l);
    }
    return returned;
  }

  /** Whether any of `limits` has a two-tier mode (a store needs this wrapper). */
  static wanted(limits: readonly CompiledLimit[]): boolean {
    return limits.some((l) => l.tier !== undefined);
  }

  async evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    const n = ops.length;
    if (n === 0) return [];
    const refused = this.#preFilter(ops, now);
    if (refused !== undefined) return refused;
    return this.#evaluateLeases(ops, now, false);
  }

  /**
   * The pre-filter: when an enforcing op with a local copy rejects at the
   * latest instant the store's clock can show, the chain is rejected here
   * (unless an op counts rejected attempts, which only the store can count).
   */
  #preFilter(ops: readonly StoreOp[], now: number): StoreOpResult[] | undefined {
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
  #record(ops: readonly StoreOp[], results: readonly StoreOpResult[], now: number): void {
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

  async #evaluateLeases(ops: readonly StoreOp[], now: number, exact: boolean): Promise<readonly StoreOpResult[]> {
    if (this.#leases.size === 0) return this.#shared(ops, now);
    let planned: Planned[] | undefined;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as StoreOp;
      const lease = this.#leases.get(op.spec.id);
      if (lease === undefined) continue;
      let state = lease.keys.get(op.key);
      if (state === undefined) {
        state = { lease: undefined, pending: false, shared: undefined };
        lease.keys.set(op.key, state);
        if (lease.keys.size > lease.tier.maxKeys) this.#evictOldest(lease);
      }
      planned ??= [];
      planned.push({ index: i, lease, state, reserved: 0, from: undefined, draw: 0 });
    }
    if (planned === undefined) return this.#shared(ops, now);
    const at = this.#clock.now();
    let needStore = planned.length < ops.length;
    for (const p of planned) {
      const op = ops[p.index] as StoreOp;
      const l = this.#live(p.lease, p.state, op, at);
      if (l !== undefined && l.units >= op.cost) {
        l.units -= op.cost;
        p.reserved = op.cost;
        p.from = l;
      } else {
        // One lease draw per key at a time; near the limit the size is the cost: an exact shared check.
        p.draw = exact || p.state.pending ? op.cost : this.#size(p.lease, p.state, op.cost);
        if (p.draw > op.cost) {
          // What the old lease still holds goes back first, so that the key's unspent units never exceed maxLease.
          if (l !== undefined) void this.#giveBack(p.lease, op.key, l);
          p.state.lease = undefined;
          p.state.pending = true;
        }
        needStore = true;
      }
    }
    if (!needStore) return planned.map((p) => this.#localResult(p, ops[p.index] as StoreOp, at));
    return this.#draw(ops, planned, now, at, exact);
  }

  /** The chain with draws in place of the lease ops that need one, and the local ones left out. */
  async #draw(ops: readonly StoreOp[], planned: readonly Planned[], now: number, at: number, exact: boolean): Promise<readonly StoreOpResult[]> {
    const byIndex = new Map<number, Planned>(planned.map((p) => [p.index, p]));
    const sent: StoreOp[] = [];
    const sentIndex: number[] = [];
    ops.forEach((op, i) => {
      const p = byIndex.get(i);
      if (p !== undefined && p.reserved > 0) return;
      sent.push(p === undefined ? op : { spec: p.lease.shared, key: op.key, cost: p.draw, leaseId: undefined });
      sentIndex.push(i);
    });
    const drawing = planned.filter((p) => p.draw > 0);
    let res: readonly StoreOpResult[];
    try {
      res = await this.#shared(sent, now);
    } catch (error) {
      for (const p of planned) this.#unreserve(p);
      throw error;
    } finally {
      for (const p of drawing) if (p.draw > (ops[p.index] as StoreOp).cost) p.state.pending = false;
    }
    const out = new Array<StoreOpResult>(ops.length);
    const replyAt = new Map<number, StoreOpResult>();
    sentIndex.forEach((i, j) => replyAt.set(i, res[j] as StoreOpResult));
    let allowed = true;
    let retry = false;
    for (const [i, r] of replyAt) {
      if (r.allowed || (ops[i] as StoreOp).spec.shadow) continue;
      allowed = false;
      const p = byIndex.get(i);
      if (p !== undefined && p.draw > (ops[i] as StoreOp).cost && !exact) retry = true;
    }
    if (!allowed) {
      for (const p of planned) this.#unreserve(p);
      for (const p of drawing) {
        const r = replyAt.get(p.index) as StoreOpResult;
        p.state.shared = r.remaining;
      }
      // A draw bigger than the request may be what rejected it: once more with each draw sized to what remains.
      if (retry) return this.#evaluateLeases(ops, now, true);
      for (const [i, r] of replyAt) out[i] = r;
      for (const p of planned) if (out[p.index] === undefined) out[p.index] = NOT_CONSULTED((ops[p.index] as StoreOp).spec);
      return out;
    }
    for (const [i, r] of replyAt) out[i] = r;
    for (const p of planned) {
      const op = ops[p.index] as StoreOp;
      if (p.reserved > 0) {
        out[p.index] = this.#localResult(p, op, at);
        continue;
      }
      const r = replyAt.get(p.index) as StoreOpResult;
      // A shadow limit's draw may be rejected while the chain admits: no lease from it.
      if (!r.consumed) {
        out[p.index] = r;
        continue;
      }
      if (p.draw === op.cost) {
        // An exact shared check: nothing left over, and any lease that arrived meanwhile stays.
        p.state.shared = r.remaining;
        out[p.index] = r;
        continue;
      }
      this.#replace(p.lease, p.state, op, r, now, at, p.draw - op.cost);
      out[p.index] = { ...r, remaining: Math.min(op.spec.params.burst, r.remaining + p.draw - op.cost) };
    }
    return out;
  }

  /** Sends ops to the shared store, learns the clock offset, and records the pre-filtered admissions. */
  async #shared(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    const res = await this.#inner.evaluate(ops, now);
    const received = this.#clock.now();
    const decidedAt = res[0]?.decidedAt ?? now;
    // The store decided after the check's `now` (limiter time): server time, or that very `now` for a store that
    // decides at the limiter's clock, whose offset is then 0. Either way the offset is at most decidedAt - now.
    this.#offset.sample(now, received, decidedAt);
    this.#record(ops, res, now);
    return res;
  }

  /** The key's lease if it can still be spent from; an expired one is given back. */
  #live(lease: LeaseLimit, state: LeaseKey, op: StoreOp, at: number): Lease | undefined {
    const l = state.lease;
    if (l === undefined) return undefined;
    if (at < l.expiresAt) return l;
    state.lease = undefined;
    void this.#giveBack(lease, op.key, l);
    return undefined;
  }

  /**
   * The next lease's size: the shared remaining shared by 2k processes,
   * between the cost and maxLease. A key this process has not seen yet gets
   * an exact check first (its reply says what remains), so keys seen once
   * (a distinct recipient per request) cost what a plain check costs and
   * leave no unspent lease behind.
   */
  #size(lease: LeaseLimit, state: LeaseKey, cost: number): number {
    const k = Math.max(1, this.#replicas());
    const shared = state.shared;
    if (shared === undefined) return cost;
    return Math.max(cost, Math.min(lease.maxLease, Math.floor(shared / (2 * k))));
  }

  /** A lease draw admitted: the new lease holds what the request did not take; whatever an old one held goes back. */
  #replace(lease: LeaseLimit, state: LeaseKey, op: StoreOp, r: StoreOpResult, now: number, at: number, units: number): void {
    const old = state.lease;
    if (old !== undefined) void this.#giveBack(lease, op.key, old);
    state.shared = r.remaining;
    const decidedAt = r.decidedAt ?? now;
    let expiresAt = at + lease.tier.leaseLifetimeMs;
    if (lease.windowed) {
      // Spent only in the aligned window it was counted in: the store's clock passes `decidedAt` no earlier than `now`.
      const W = op.spec.params.windowMs;
      const end = Math.floor(decidedAt / W) * W + W;
      expiresAt = Math.min(expiresAt, now + (end - decidedAt));
    }
    const fresh: Lease = { units, expiresAt, shared: r.remaining, resetAt: at + r.resetMs, decidedAt };
    state.lease = units > 0 && !this.#closed ? fresh : undefined;
    if (this.#closed) void this.#giveBack(lease, op.key, fresh);
    else if (units > 0) this.#startSweep();
  }

  #localResult(p: Planned, op: StoreOp, at: number): StoreOpResult {
    const l = p.from as Lease;
    const remaining = Math.min(op.spec.params.burst, l.units + l.shared);
    return { allowed: true, consumed: op.cost > 0, remaining, resetMs: Math.max(0, l.resetAt - at), retryAfterMs: 0, delayMs: 0 };
  }

  /**
   * Puts reserved units back on the lease they came from while it is still
   * the key's lease; once it has been given back or replaced they stay spent
   * (moved onto another lease they could be spent in a window that never
   * counted them).
   */
  #unreserve(p: Planned): void {
    if (p.reserved === 0) return;
    const l = p.from;
    if (l !== undefined && p.state.lease === l) l.units += p.reserved;
    p.reserved = 0;
    p.from = undefined;
  }

  #evictOldest(lease: LeaseLimit): void {
    for (const [key, s] of lease.keys) {
      if (s.pending) continue;
      lease.keys.delete(key);
      if (s.lease !== undefined) void this.#giveBack(lease, key, s.lease);
      return;
    }
  }

  /**
   * Gives a lease's unspent units back to the shared state, at the instant
   * they were drawn (a fixed or sliding window takes them back only while it
   * is still the window they were counted in). Best effort: what fails to
   * go back expires with the state.
   */
  #giveBack(lease: LeaseLimit, key: string, l: Lease): Promise<void> {
    const units = l.units;
    l.units = 0;
    if (units <= 0) return Promise.resolve();
    const op: StoreOp = { spec: lease.shared, key, cost: units, leaseId: undefined, decidedAt: l.decidedAt };
    let back: Promise<void>;
    try {
      back = this.#inner.refund([op], l.decidedAt);
    } catch (error) {
      back = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const done = back
      .catch((error: unknown) => {
        if (storeErrorChannel.hasSubscribers) storeErrorChannel.publish({ store: this.kind, kind: this.kind, reason: 'error', error, limits: [lease.shared.name] });
      })
      .finally(() => this.#returning.delete(done));
    this.#returning.add(done);
    return done;
  }

  async refund(ops: readonly StoreOp[], now: number): Promise<void> {
    const through: StoreOp[] = [];
    const at = this.#clock.now();
    for (const op of ops) {
      const lease = this.#leases.get(op.spec.id);
      if (lease === undefined) {
        through.push(op);
        continue;
      }
      // A lease op's cost goes back onto its live lease (every admission spends from one). Once the lease has
      // ended the cost stays spent: given to the shared state now, it could land in a later window (the strict side).
      const l = lease.keys.get(op.key)?.lease;
      if (l !== undefined && at < l.expiresAt) l.units += op.cost;
    }
    if (through.length > 0) await this.#inner.refund(through, now);
  }

  release(op: StoreOp, now: number): Promise<void> {
    return this.#inner.release(op, now);
  }

  /**
   * Stops the sweep and gives every unspent lease back; later draws give
   * theirs back at once. Resolves when every give-back (these, and those
   * already in flight) has settled: the units are back in the shared store,
   * or the store failed and they expire with the state. Safe to call again:
   * each call resolves once nothing is left in flight.
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#sweepTimer !== undefined) clearInterval(this.#sweepTimer);
    this.#sweepTimer = undefined;
    for (const lease of this.#leases.values()) {
      for (const [key, s] of lease.keys) {
        if (s.lease !== undefined) void this.#giveBack(lease, key, s.lease);
        s.lease = undefined;
      }
    }
    while (this.#returning.size > 0) await Promise.all([...this.#returning]);
  }
}

/** Builds a lease-mode limit: its largest lease and, for buckets, the shared bucket it draws from. */
function leaseLimit(l: CompiledLimit, tier: LeaseTier, algo: Algorithm<unknown>, replicas: number | 'discover', at: string): LeaseLimit {
  const p: AlgorithmParams = l.params;
  const bucket = l.algorithm === 'token-bucket' || l.algorithm === 'gcra';
  if (bucket && replicas === 'discover') {
    throw new ConfigError('RC_INVALID_OPTION', at, `lease mode on ${l.algorithm} needs a configured replica count (replicas: <number>): the shared bucket keeps burst - k x maxLease`);
  }
  const k = typeof replicas === 'number' ? replicas : 1;
  const capacity = algo.capacity(p);
  const maxLease = tier.maxLease ?? Math.max(1, Math.floor(capacity / (8 * k)));
  if (maxLease > capacity) throw new ConfigError('RC_INVALID_OPTION', `${at}.maxLease`, `must be at most the limit's capacity ${capacity}, got ${maxLease}`);
  let shared = l;
  if (bucket) {
    const burst = p.burst - k * maxLease;
    if (burst < l.cost) {
      throw new ConfigError(
        'RC_INVALID_OPTION',
        `${at}.maxLease`,
        `k x maxLease = ${k} x ${maxLease} leaves the shared bucket ${burst} of burst ${p.burst}, below the cost ${l.cost}; lower maxLease or raise burst`,
      );
    }
    shared = { ...l, params: { ...p, burst }, tier: undefined };
  }
  return { tier, algo, shared, maxLease, windowed: !bucket, keys: new Map() };
}
