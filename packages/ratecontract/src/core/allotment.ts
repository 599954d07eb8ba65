import type { Algorithm, AlgorithmParams } from '../algorithms/types.js';
import type { Clock } from './clock.js';
import { ConfigError } from './errors.js';
import { storeErrorChannel } from './events.js';
import { NOT_CONSULTED } from './prefilter.js';
import type { Store, StoreOp, StoreOpResult } from './store.js';
import type { CompiledLimit, CompiledTier } from './types.js';

export type AllotmentTier = Extract<CompiledTier, { mode: 'allotment' }>;

/** Quota one process holds for one key: units taken from the shared state, spent locally until `expiresAt`. */
interface Allotment {
  units: number;
  /** Limiter-clock ms after which the allotment is not spent from (lifetime, and for windows the window's end). */
  readonly expiresAt: number;
  /** The shared remaining the draw reported (after it). */
  readonly shared: number;
  /** Limiter-clock ms at which the shared state is empty again, as the draw reported. */
  readonly resetAt: number;
  /** The store-clock instant of the draw: unspent units go back at it, into the window they were counted in. */
  readonly decidedAt: number;
}

interface AllotmentKey {
  allotment: Allotment | undefined;
  /**
   * A draw in flight for this key. Checks that find one make exact shared
   * checks meanwhile (cost only, nothing left over), so a process never
   * holds more than `maxAllotment` unspent units of a key.
   */
  pending: boolean;
  /** The shared remaining the last draw reported, for the next allotment's size. */
  shared: number | undefined;
}

/** A limit in allotment mode, with what its draws need. */
interface AllotmentLimit {
  readonly tier: AllotmentTier;
  readonly algo: Algorithm<unknown>;
  /** The limit the draws are made with (buckets: the shared bucket's reduced capacity). */
  readonly shared: CompiledLimit;
  readonly maxAllotment: number;
  readonly windowed: boolean;
  readonly keys: Map<string, AllotmentKey>;
}

/** One allotment op of a check: decided on the local allotment, or by a draw from the shared state. */
interface Planned {
  readonly index: number;
  readonly limit: AllotmentLimit;
  readonly state: AllotmentKey;
  /** Units reserved on the local allotment (0: needs a draw). */
  reserved: number;
  /**
   * The allotment they were reserved on: it may end while the check waits
   * for the store (the sweep or another check gives it back, or a new one
   * takes its place), and the check still answers from the allotment it spent.
   */
  from: Allotment | undefined;
  /** Draw size (0: none). */
  draw: number;
}

/**
 * The allotment sweep: every `clamp(shortest allotmentLifetime, 50 ms, 1 s)`
 * an unref'd timer looks at up to SWEEP_KEYS_PER_TICK keys (resuming where
 * the last tick stopped) and gives back the allotments that have ended, so
 * the units of a key that is never checked again go back without waiting
 * for its eviction.
 */
export const SWEEP_KEYS_PER_TICK = 256;
const SWEEP_MIN_MS = 50;
const SWEEP_MAX_MS = 1000;

/** Sends ops to the shared store (and learns what its replies say); the TierStore's path to the store. */
export type SharedCall = (ops: readonly StoreOp[], now: number) => Promise<readonly StoreOpResult[]>;

/**
 * The allotment mode of two-tier limits (`tier: { mode: 'allotment' }`;
 * docs/limits.md, "Two-tier limits"): a check is decided on this process's
 * allotment of the key's quota; when the allotment is spent or has expired,
 * the check draws a new one (an op of the allotment's size in the same chain
 * call), sized `remaining / 2k` between the cost and `maxAllotment`, so near
 * the limit every check is an exact shared check. Every local admission
 * spends a unit the shared state counted, in the same aligned window
 * (fixed-window, sliding-window); bucket draws come from a shared bucket of
 * `burst - k x maxAllotment`, so the units allotments hold never lift the
 * bucket above `burst`. Unspent units go back when an allotment expires or
 * the limiter closes.
 */
export class Allotments {
  readonly #inner: Store;
  readonly #clock: Clock;
  readonly #replicas: () => number;
  readonly #shared: SharedCall;
  readonly #limits = new Map<string, AllotmentLimit>();
  #closed = false;
  /** Gives-back in flight (refund calls), so that close() can wait for them. */
  readonly #returning = new Set<Promise<void>>();
  #sweepTimer: ReturnType<typeof setInterval> | undefined;
  /** Where the sweep resumes: a live iterator over each allotment limit's keys. */
  #sweepAt: { limit: AllotmentLimit; keys: Iterator<[string, AllotmentKey]> } | undefined;
  #sweepOrder: AllotmentLimit[] = [];

  /** `inner` takes the give-backs; `shared` makes the draws. */
  constructor(inner: Store, clock: Clock, currentReplicas: () => number, shared: SharedCall) {
    this.#inner = inner;
    this.#clock = clock;
    this.#replicas = currentReplicas;
    this.#shared = shared;
  }

  get size(): number {
    return this.#limits.size;
  }

  /** Decides `l` on allotments; `replicas` is the configured k (bucket allotments need a number), `at` its option path. */
  add(l: CompiledLimit, tier: AllotmentTier, algo: Algorithm<unknown>, replicas: number | 'discover', at: string): void {
    const limit = allotmentLimit(l, tier, algo, replicas, at);
    this.#limits.set(l.id, limit);
    this.#sweepOrder.push(limit);
  }

  /**
   * Starts the sweep timer with the first allotment (not at construction: a
   * limiter built at module scope starts no timer, which some runtimes
   * refuse there). The timer holds the allotments weakly, so a limiter
   * dropped without close() is still collected, and is unref'd where the
   * runtime has unref.
   */
  #startSweep(): void {
    if (this.#sweepTimer !== undefined || this.#closed) return;
    const shortest = Math.min(...this.#sweepOrder.map((l) => l.tier.allotmentLifetimeMs));
    const self = new WeakRef(this);
    const timer = setInterval(() => {
      const allotments = self.deref();
      if (allotments === undefined) clearInterval(timer);
      else allotments.sweep();
    }, Math.min(SWEEP_MAX_MS, Math.max(SWEEP_MIN_MS, shortest)));
    (timer as { unref?: () => void }).unref?.();
    this.#sweepTimer = timer;
  }

  /**
   * One tick of the allotment sweep: looks at up to `maxKeys` keys, resuming
   * where the last tick stopped, gives back every allotment among them that
   * has ended at the limiter clock's now, and forgets those keys. Returns
   * how many allotments it gave back.
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
        const limit = order[0] as AllotmentLimit;
        cursor = this.#sweepAt = { limit, keys: limit.keys.entries() };
      }
      const step = cursor.keys.next();
      if (step.done === true) {
        // This limit's keys are done: the next limit, from its first key.
        const next = order[(order.indexOf(cursor.limit) + 1) % order.length] as AllotmentLimit;
        this.#sweepAt = { limit: next, keys: next.keys.entries() };
        limitsDone++;
        continue;
      }
      looked++;
      const [key, state] = step.value;
      const a = state.allotment;
      if (a === undefined || state.pending || at < a.expiresAt) continue;
      state.allotment = undefined;
      cursor.limit.keys.delete(key);
      if (a.units > 0) returned++;
      void this.#giveBack(cursor.limit, key, a);
    }
    return returned;
  }

  /** Decides a chain: allotment ops on local allotments where they can, everything else (and the draws) by `shared`. */
  async evaluate(ops: readonly StoreOp[], now: number, exact: boolean): Promise<readonly StoreOpResult[]> {
    if (this.#limits.size === 0) return this.#shared(ops, now);
    let planned: Planned[] | undefined;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as StoreOp;
      const limit = this.#limits.get(op.spec.id);
      if (limit === undefined) continue;
      let state = limit.keys.get(op.key);
      if (state === undefined) {
        state = { allotment: undefined, pending: false, shared: undefined };
        limit.keys.set(op.key, state);
        if (limit.keys.size > limit.tier.maxKeys) this.#evictOldest(limit);
      }
      planned ??= [];
      planned.push({ index: i, limit, state, reserved: 0, from: undefined, draw: 0 });
    }
    if (planned === undefined) return this.#shared(ops, now);
    const at = this.#clock.now();
    let needStore = planned.length < ops.length;
    for (const p of planned) {
      const op = ops[p.index] as StoreOp;
      const a = this.#live(p.limit, p.state, op, at);
      if (a !== undefined && a.units >= op.cost) {
        a.units -= op.cost;
        p.reserved = op.cost;
        p.from = a;
      } else {
        // One draw per key at a time; near the limit the size is the cost: an exact shared check.
        p.draw = exact || p.state.pending ? op.cost : this.#size(p.limit, p.state, op.cost);
        if (p.draw > op.cost) {
          // What the old allotment still holds goes back first, so that the key's unspent units never exceed maxAllotment.
          if (a !== undefined) void this.#giveBack(p.limit, op.key, a);
          p.state.allotment = undefined;
          p.state.pending = true;
        }
        needStore = true;
      }
    }
    if (!needStore) return planned.map((p) => this.#localResult(p, ops[p.index] as StoreOp, at));
    return this.#draw(ops, planned, now, at, exact);
  }

  /** The chain with draws in place of the allotment ops that need one, and the local ones left out. */
  async #draw(ops: readonly StoreOp[], planned: readonly Planned[], now: number, at: number, exact: boolean): Promise<readonly StoreOpResult[]> {
    const byIndex = new Map<number, Planned>(planned.map((p) => [p.index, p]));
    const sent: StoreOp[] = [];
    const sentIndex: number[] = [];
    ops.forEach((op, i) => {
      const p = byIndex.get(i);
      if (p !== undefined && p.reserved > 0) return;
      sent.push(p === undefined ? op : { spec: p.limit.shared, key: op.key, cost: p.draw, leaseId: undefined });
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
      if (retry) return this.evaluate(ops, now, true);
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
      // A shadow limit's draw may be rejected while the chain admits: no allotment from it.
      if (!r.consumed) {
        out[p.index] = r;
        continue;
      }
      if (p.draw === op.cost) {
        // An exact shared check: nothing left over, and any allotment that arrived meanwhile stays.
        p.state.shared = r.remaining;
        out[p.index] = r;
        continue;
      }
      this.#replace(p.limit, p.state, op, r, now, at, p.draw - op.cost);
      out[p.index] = { ...r, remaining: Math.min(op.spec.params.burst, r.remaining + p.draw - op.cost) };
    }
    return out;
  }

  /** The key's allotment if it can still be spent from; an expired one is given back. */
  #live(limit: AllotmentLimit, state: AllotmentKey, op: StoreOp, at: number): Allotment | undefined {
    const a = state.allotment;
    if (a === undefined) return undefined;
    if (at < a.expiresAt) return a;
    state.allotment = undefined;
    void this.#giveBack(limit, op.key, a);
    return undefined;
  }

  /**
   * The next allotment's size: the shared remaining shared by 2k processes,
   * between the cost and maxAllotment. A key this process has not seen yet
   * gets an exact check first (its reply says what remains), so keys seen
   * once (a distinct recipient per request) cost what a plain check costs
   * and leave no unspent allotment behind.
   */
  #size(limit: AllotmentLimit, state: AllotmentKey, cost: number): number {
    const k = Math.max(1, this.#replicas());
    const shared = state.shared;
    if (shared === undefined) return cost;
    return Math.max(cost, Math.min(limit.maxAllotment, Math.floor(shared / (2 * k))));
  }

  /** A draw admitted: the new allotment holds what the request did not take; whatever an old one held goes back. */
  #replace(limit: AllotmentLimit, state: AllotmentKey, op: StoreOp, r: StoreOpResult, now: number, at: number, units: number): void {
    const old = state.allotment;
    if (old !== undefined) void this.#giveBack(limit, op.key, old);
    state.shared = r.remaining;
    const decidedAt = r.decidedAt ?? now;
    let expiresAt = at + limit.tier.allotmentLifetimeMs;
    if (limit.windowed) {
      // Spent only in the aligned window it was counted in: the store's clock passes `decidedAt` no earlier than `now`.
      const W = op.spec.params.windowMs;
      const end = Math.floor(decidedAt / W) * W + W;
      expiresAt = Math.min(expiresAt, now + (end - decidedAt));
    }
    const fresh: Allotment = { units, expiresAt, shared: r.remaining, resetAt: at + r.resetMs, decidedAt };
    state.allotment = units > 0 && !this.#closed ? fresh : undefined;
    if (this.#closed) void this.#giveBack(limit, op.key, fresh);
    else if (units > 0) this.#startSweep();
  }

  #localResult(p: Planned, op: StoreOp, at: number): StoreOpResult {
    const a = p.from as Allotment;
    const remaining = Math.min(op.spec.params.burst, a.units + a.shared);
    return { allowed: true, consumed: op.cost > 0, remaining, resetMs: Math.max(0, a.resetAt - at), retryAfterMs: 0, delayMs: 0 };
  }

  /**
   * Puts reserved units back on the allotment they came from while it is
   * still the key's allotment; once it has been given back or replaced they
   * stay spent (moved onto another allotment they could be spent in a window
   * that never counted them).
   */
  #unreserve(p: Planned): void {
    if (p.reserved === 0) return;
    const a = p.from;
    if (a !== undefined && p.state.allotment === a) a.units += p.reserved;
    p.reserved = 0;
    p.from = undefined;
  }

  #evictOldest(limit: AllotmentLimit): void {
    for (const [key, s] of limit.keys) {
      if (s.pending) continue;
      limit.keys.delete(key);
      if (s.allotment !== undefined) void this.#giveBack(limit, key, s.allotment);
      return;
    }
  }

  /**
   * Gives an allotment's unspent units back to the shared state, at the
   * instant they were drawn (a fixed or sliding window takes them back only
   * while it is still the window they were counted in). Best effort: what
   * fails to go back expires with the state.
   */
  #giveBack(limit: AllotmentLimit, key: string, a: Allotment): Promise<void> {
    const units = a.units;
    a.units = 0;
    if (units <= 0) return Promise.resolve();
    const op: StoreOp = { spec: limit.shared, key, cost: units, leaseId: undefined, decidedAt: a.decidedAt };
    let back: Promise<void>;
    try {
      back = this.#inner.refund([op], a.decidedAt);
    } catch (error) {
      back = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const kind = this.#inner.kind;
    const done = back
      .catch((error: unknown) => {
        if (storeErrorChannel.hasSubscribers) storeErrorChannel.publish({ store: kind, kind, reason: 'error', error, limits: [limit.shared.name] });
      })
      .finally(() => this.#returning.delete(done));
    this.#returning.add(done);
    return done;
  }

  /**
   * Takes back the cost of allotment ops onto their live allotment (every
   * admission spends from one); once the allotment has ended the cost stays
   * spent: given to the shared state now, it could land in a later window
   * (the strict side). Returns the ops that are not allotment ops.
   */
  refund(ops: readonly StoreOp[]): StoreOp[] {
    const through: StoreOp[] = [];
    const at = this.#clock.now();
    for (const op of ops) {
      const limit = this.#limits.get(op.spec.id);
      if (limit === undefined) {
        through.push(op);
        continue;
      }
      const a = limit.keys.get(op.key)?.allotment;
      if (a !== undefined && at < a.expiresAt) a.units += op.cost;
    }
    return through;
  }

  /**
   * Stops the sweep and gives every unspent allotment back; later draws give
   * theirs back at once. Resolves when every give-back (these, and those
   * already in flight) has settled. Safe to call again.
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#sweepTimer !== undefined) clearInterval(this.#sweepTimer);
    this.#sweepTimer = undefined;
    for (const limit of this.#limits.values()) {
      for (const [key, s] of limit.keys) {
        if (s.allotment !== undefined) void this.#giveBack(limit, key, s.allotment);
        s.allotment = undefined;
      }
    }
    while (this.#returning.size > 0) await Promise.all([...this.#returning]);
  }
}

/** Builds an allotment-mode limit: its largest allotment and, for buckets, the shared bucket it draws from. */
function allotmentLimit(l: CompiledLimit, tier: AllotmentTier, algo: Algorithm<unknown>, replicas: number | 'discover', at: string): AllotmentLimit {
  const p: AlgorithmParams = l.params;
  const bucket = l.algorithm === 'token-bucket' || l.algorithm === 'gcra';
  if (bucket && replicas === 'discover') {
    throw new ConfigError('RC_INVALID_OPTION', at, `allotment mode on ${l.algorithm} needs a configured replica count (replicas: <number>): the shared bucket keeps burst - k x maxAllotment`);
  }
  const k = typeof replicas === 'number' ? replicas : 1;
  const capacity = algo.capacity(p);
  const maxAllotment = tier.maxAllotment ?? Math.max(1, Math.floor(capacity / (8 * k)));
  if (maxAllotment > capacity) throw new ConfigError('RC_INVALID_OPTION', `${at}.maxAllotment`, `must be at most the limit's capacity ${capacity}, got ${maxAllotment}`);
  let shared = l;
  if (bucket) {
    const burst = p.burst - k * maxAllotment;
    if (burst < l.cost) {
      throw new ConfigError(
        'RC_INVALID_OPTION',
        `${at}.maxAllotment`,
        `k x maxAllotment = ${k} x ${maxAllotment} leaves the shared bucket ${burst} of burst ${p.burst}, below the cost ${l.cost}; lower maxAllotment or raise burst`,
      );
    }
    shared = { ...l, params: { ...p, burst }, tier: undefined };
  }
  return { tier, algo, shared, maxAllotment, windowed: !bucket, keys: new Map() };
}
