import { randomBytes } from 'node:crypto';
import { algorithms } from '../../algorithms/registry.js';
import { figures, type Algorithm, type AlgorithmParams, type Figures } from '../../algorithms/types.js';
import { releaseLease, type ConcurrencyState } from '../../algorithms/concurrency.js';
import { runChain, runRefund, type StateAccess } from '../../core/chain.js';
import { ConfigError } from '../../core/errors.js';
import { slotKey } from '../../core/request-key.js';
import { refuseUnknown } from '../../core/options.js';
import type { StoreOp, StoreOpResult, SyncStore } from '../../core/store.js';
import type { CompiledLimit } from '../../core/types.js';

/** Options of `memoryStore()`. */
export interface MemoryStoreOptions {
  /**
   * Most keys held with their own state, across all limits. Default
   * 1,000,000 (roughly 100-200 MB, see docs/stores.md). When the store is full
   * of live state, new keys share `overflowSlots` conservative counters
   * instead of evicting anyone: a flood never resets an existing key.
   */
  readonly maxKeys?: number;
  /** Shared counters per limit used once `maxKeys` is reached. Default 65,536. */
  readonly overflowSlots?: number;
  /** Entries examined for expiry per new key (amortised reclamation, no timer per key). Default 2. */
  readonly sweepPerInsert?: number;
}

/** `memoryStore()`'s defaults, one per option (docs/stores.md and docs/config.md hold their tables to these). */
export const MEMORY_STORE_DEFAULTS = Object.freeze({ maxKeys: 1_000_000, overflowSlots: 65_536, sweepPerInsert: 2 });

const OVERFLOW_PREFIX = '\u0000overflow:';
/** Entries examined per table when a full store looks for expired state before overflowing a new key (the cursor persists, so every entry is reached in turn). */
const FULL_SWEEP = 16;

class Table {
  readonly map = new Map<string, unknown>();
  readonly algo: Algorithm<unknown>;
  readonly params: AlgorithmParams;
  /** A limit with plans: the params of every plan sharing this table; a state is kept until none of them needs it. */
  readonly shared: readonly AlgorithmParams[] | undefined;
  overflowUsed = 0;
  #cursor: MapIterator<[string, unknown]> | undefined;

  constructor(algo: Algorithm<unknown>, params: AlgorithmParams, shared: readonly AlgorithmParams[] | undefined) {
    this.algo = algo;
    this.params = params;
    this.shared = shared;
  }

  expired(state: unknown, now: number): boolean {
    if (this.shared === undefined) return this.algo.expiresAt(state, this.params) <= now;
    return this.shared.every((p) => this.algo.expiresAt(state, p) <= now);
  }

  /** Examines up to `steps` entries and deletes the expired ones; returns how many own (non-overflow) entries were deleted. */
  sweep(steps: number, now: number): number {
    let removed = 0;
    for (let i = 0; i < steps; i++) {
      if (this.#cursor === undefined) this.#cursor = this.map.entries();
      const next = this.#cursor.next();
      if (next.done === true) {
        this.#cursor = undefined;
        if (i > 0 || this.map.size === 0) break;
        continue;
      }
      const [key, state] = next.value;
      if (this.expired(state, now)) {
        this.map.delete(key);
        if (key.startsWith(OVERFLOW_PREFIX)) this.overflowUsed--;
        else removed++;
      }
    }
    return removed;
  }
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The in-process store: runs the algorithms directly. Bounded: at most
 * `maxKeys` keys with their own state plus `overflowSlots` shared counters
 * per limit. Expired state is reclaimed by an amortised sweep on insert (no
 * timer per key). A key flood cannot reset an existing key's counter: live
 * entries are never evicted, and keys that arrive while the store is full are
 * counted in shared slots, which can only over-count (reject early), never
 * under-count.
 *
 * State is per process: k replicas each with a memory store enforce up to
 * k*N. Use the Redis store for a fleet.
 */
export class MemoryStore implements SyncStore {
  readonly kind = 'memory';
  readonly maxKeys: number;
  readonly overflowSlots: number;
  readonly #sweepPerInsert: number;
  readonly #tables = new Map<string, Table>();
  readonly #instances = new Map<string, number>();
  #size = 0;
  readonly #slotSecret = randomBytes(32);

  constructor(options: MemoryStoreOptions = {}) {
    const o = resolveMemoryStoreOptions(options);
    this.maxKeys = o.maxKeys;
    this.overflowSlots = o.overflowSlots;
    this.#sweepPerInsert = o.sweepPerInsert;
  }

  /**
   * `keySlots`: the slot key of `key` among `slots`, keyed by a secret drawn
   * when this store is created (the store is process-local, so the mapping
   * only has to agree within the process, and nobody outside can aim keys
   * at a victim's slot).
   */
  slotKey(key: string, slots: number): string {
    return slotKey(key, slots, this.#slotSecret);
  }

  /** Keys currently held with their own state (not counting overflow slots). */
  get size(): number {
    return this.#size;
  }

  /** Overflow slots in use across all limits. */
  get overflowSize(): number {
    let n = 0;
    for (const t of this.#tables.values()) n += t.overflowUsed;
    return n;
  }

  evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    return Promise.resolve(this.evaluateSync(ops, now));
  }

  evaluateSync(ops: readonly StoreOp[], now: number): readonly StoreOpResult[] {
    if (ops.length === 1) return [this.#single(ops[0] as StoreOp, now)];
    return runChain(ops, now, this.#access(ops, now));
  }

  /** runChain for a chain of one op (the common case), without the accessor allocations. */
  #single(op: StoreOp, now: number): StoreOpResult {
    const f = this.#figures;
    this.decideOne(op.spec, op.key, op.cost, now, f, op.leaseId);
    if (f.allowed) return { allowed: true, consumed: op.cost > 0, remaining: f.remaining, resetMs: f.resetMs, retryAfterMs: 0, delayMs: f.delayMs };
    return { allowed: false, consumed: false, remaining: f.remaining, resetMs: f.resetMs, retryAfterMs: f.retryAfterMs, delayMs: 0 };
  }

  /** Scratch figures of `#single` (decisions are synchronous, so one is enough). */
  readonly #figures = figures();

  /**
   * Decides a chain of exactly one limit and writes the algorithm's figures
   * into `out` (read them before the next decision): alone in its chain, an
   * op that admits is consumed (when its cost is above 0). One map lookup; a
   * key's own state is updated in place (`Algorithm.decideInto`), so an
   * admitted request allocates nothing here. The limiter's single-limit fast
   * path calls this directly.
   */
  decideOne(limit: CompiledLimit, rawKey: string, cost: number, now: number, out: Figures, leaseId?: string): void {
    const table = this.#tableOf(limit);
    const state = table.map.get(rawKey);
    if (state === undefined) {
      this.#decideNew(table, limit, rawKey, cost, now, out, leaseId);
      return;
    }
    const next = table.algo.decideInto(state, now, cost, limit.params, out, cost > 0 ? state : undefined, leaseId);
    // `next === state`: updated in place.
    if (out.allowed && cost > 0 && next !== state) this.#write(table, rawKey, next, now);
  }

  /** `decideOne` for a key without its own state (kept apart so the common case stays small). */
  #decideNew(table: Table, limit: CompiledLimit, rawKey: string, cost: number, now: number, out: Figures, leaseId: string | undefined): void {
    const key = this.#resolve(table, rawKey, now, true);
    // A key getting its own entry after the store overflowed starts from its slot's count (never written in place: not its own).
    const state = table.overflowUsed > 0 ? table.map.get(key.startsWith(OVERFLOW_PREFIX) ? key : this.#slotKey(key)) : undefined;
    const next = table.algo.decideInto(state, now, cost, limit.params, out, undefined, leaseId);
    if (out.allowed && cost > 0 && next !== state) this.#write(table, key, next, now);
  }

  refund(ops: readonly StoreOp[], now: number): Promise<void> {
    runRefund(ops, now, this.#access(ops, now));
    return Promise.resolve();
  }

  release(op: StoreOp, now: number): Promise<void> {
    if (op.leaseId === undefined) return Promise.resolve();
    const table = this.#table(op);
    const key = table.map.has(op.key) ? op.key : this.#slotKey(op.key);
    const state = table.map.get(key) as ConcurrencyState | undefined;
    if (state !== undefined) this.#write(table, key, releaseLease(state, op.leaseId), now);
    return Promise.resolve();
  }

  /** Replica discovery among limiters sharing this store (in one process, mostly useful in tests). */
  heartbeat(instanceId: string, ttlMs: number, now: number): Promise<number> {
    this.#instances.set(instanceId, now + ttlMs);
    for (const [id, exp] of this.#instances) if (exp <= now) this.#instances.delete(id);
    return Promise.resolve(this.#instances.size);
  }

  /** What `evaluate(ops, now)` would answer, changing nothing (the chain rule over reads only). */
  peek(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    return Promise.resolve(this.peekSync(ops, now));
  }

  /** `peek`, synchronously. */
  peekSync(ops: readonly StoreOp[], now: number): readonly StoreOpResult[] {
    const access = this.#access(ops, now);
    return runChain(ops, now, { get: (i) => access.get(i), set: () => undefined });
  }

  /**
   * Forgets the state of each op's key (`limiter.reset`). A key counted in a
   * shared overflow slot (the store was full) keeps the slot: clearing it
   * would reset the other keys that share it.
   */
  clear(ops: readonly StoreOp[]): Promise<void> {
    for (const op of ops) this.reset(op.spec.id, op.key);
    return Promise.resolve();
  }

  /**
   * Forgets the state of `key` under `limitId` (a limit's `id`).
   * @deprecated Use `limiter.reset(limitName, ctx)`, which works on every store and reports the reset.
   */
  reset(limitId: string, key: string): void {
    const table = this.#tables.get(limitId);
    if (table?.map.delete(key) === true) this.#size--;
  }

  #lastLimit: CompiledLimit | undefined;
  #lastTable: Table | undefined;

  #table(op: StoreOp): Table {
    return this.#tableOf(op.spec);
  }

  #tableOf(limit: CompiledLimit): Table {
    if (limit === this.#lastLimit) return this.#lastTable as Table;
    let t = this.#tables.get(limit.id);
    if (t === undefined) {
      t = new Table(algorithms[limit.algorithm], limit.params, limit.sharedParams);
      this.#tables.set(limit.id, t);
    }
    this.#lastLimit = limit;
    this.#lastTable = t;
    return t;
  }

  #slotKey(key: string): string {
    return OVERFLOW_PREFIX + String(fnv1a(key) % this.overflowSlots);
  }

  /** Where the state of `key` lives: its own entry, or (store full) a shared overflow slot. */
  #resolve(table: Table, key: string, now: number, knownAbsent = false): string {
    if (this.#size < this.maxKeys || (!knownAbsent && table.map.has(key))) return key;
    let removed = 0;
    for (const t of this.#tables.values()) {
      removed += t.sweep(FULL_SWEEP, now);
      if (removed > 0) break;
    }
    this.#size -= removed;
    return this.#size < this.maxKeys ? key : this.#slotKey(key);
  }

  #access(ops: readonly StoreOp[], now: number): StateAccess {
    const n = ops.length;
    const tables = new Array<Table>(n);
    const keys = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      const op = ops[i] as StoreOp;
      const table = this.#table(op);
      tables[i] = table;
      keys[i] = this.#resolve(table, op.key, now);
    }
    return {
      get: (i) => {
        const table = tables[i] as Table;
        const key = keys[i] as string;
        const state = table.map.get(key);
        // A key getting its own entry after the store overflowed starts from its slot's count.
        if (state === undefined && table.overflowUsed > 0 && !key.startsWith(OVERFLOW_PREFIX)) {
          return table.map.get(this.#slotKey(key));
        }
        return state;
      },
      set: (i, state) => {
        this.#write(tables[i] as Table, keys[i] as string, state, now);
      },
    };
  }

  #write(table: Table, key: string, state: unknown, now: number): void {
    const overflow = key.startsWith(OVERFLOW_PREFIX);
    if (state === undefined) {
      if (table.map.delete(key)) {
        if (overflow) table.overflowUsed--;
        else this.#size--;
      }
      return;
    }
    const had = table.map.has(key);
    table.map.set(key, state);
    if (had) return;
    if (overflow) {
      table.overflowUsed++;
      return;
    }
    this.#size++;
    this.#size -= table.sweep(this.#sweepPerInsert, now);
  }
}

/**
 * A memory store's options checked and defaulted, as the store takes them:
 * the one check `memoryStore()` and the contract file's validation share,
 * without building a store. Throws `ConfigError`.
 */
export function resolveMemoryStoreOptions(options: MemoryStoreOptions = {}): Required<MemoryStoreOptions> {
  if (options === null || typeof options !== 'object') throw new ConfigError('RC_INVALID_OPTION', 'memoryStore', 'options must be an object');
  refuseUnknown(options, ['maxKeys', 'overflowSlots', 'sweepPerInsert'], 'memoryStore');
  return {
    maxKeys: positiveInt(options.maxKeys ?? MEMORY_STORE_DEFAULTS.maxKeys, 'memoryStore.maxKeys'),
    overflowSlots: positiveInt(options.overflowSlots ?? MEMORY_STORE_DEFAULTS.overflowSlots, 'memoryStore.overflowSlots'),
    sweepPerInsert: positiveInt(options.sweepPerInsert ?? MEMORY_STORE_DEFAULTS.sweepPerInsert, 'memoryStore.sweepPerInsert'),
  };
}

function positiveInt(value: number, option: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new ConfigError('RC_INVALID_OPTION', option, `must be a positive integer, got ${String(value)}`);
  }
  return value;
}

/** Creates an in-process store. See `MemoryStore`. */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  return new MemoryStore(options);
}
