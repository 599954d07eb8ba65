import * as crypto from 'node:crypto';
import { runChain, runRefund, type StateAccess } from '../../core/chain.js';
import { ConfigError, RateContractError } from '../../core/errors.js';
import { refuseUnknown } from '../../core/options.js';
import type { BreakerOptions } from '../../core/store-circuit.js';
import type { Store, StoreOp, StoreOpResult } from '../../core/store.js';
import { monotonicNow, unrefTimer } from '../../core/timers.js';
import type { CompiledLimit } from '../../core/types.js';
import { checkTableName, DEFAULT_QUOTA_TABLE, pgQuotaMigration } from './migration.js';

/**
 * What the store needs of a PostgreSQL client: `query(text, values)`
 * resolving `{ rows }`, as a `pg.Pool` (or `pg.Client`) has. Structural, so
 * the package imports nothing from `pg`.
 */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ readonly rows: readonly unknown[]; readonly rowCount?: number | null }>;
}

/**
 * The shortest window the store holds (1 hour). A database in the request
 * path of every call makes the checking the DoS: the store is for slow
 * quotas (1,000,000 calls per month per tenant) checked against a cache,
 * not for request rates.
 */
export const MIN_QUOTA_WINDOW_MS = 3_600_000;

/** `pgQuotaStore()`'s defaults (docs/pg.md holds its table to these). */
export const PG_QUOTA_STORE_DEFAULTS = Object.freeze({
  table: DEFAULT_QUOTA_TABLE,
  flushMs: 1000,
  flushUnits: 100,
  cacheMs: 1000,
  queryTimeoutMs: 2000,
  deadlineMs: 1000,
} as const);

/** Options of `pgQuotaStore()`. */
export interface PgQuotaStoreOptions {
  /** A `pg.Pool` (or anything with `query(text, values)` resolving `{ rows }`). Required. The store never ends it. */
  readonly pool: PgQueryable;
  /** The table (created by `pgQuotaMigration(table)` or `store.migrate()`): a lower-case identifier, optionally schema-qualified. Default `'ratecontract_quota'`. */
  readonly table?: string | undefined;
  /** Unflushed increments are written at least this often, ms (one statement for every key). Default 1000. */
  readonly flushMs?: number | undefined;
  /**
   * Most units a process admits for one key and window before the database
   * has them: reaching it starts a flush, and a check that would go beyond
   * it waits for the flush. With k processes a quota of N admits at most
   * N + (k - 1) x flushUnits per window (docs/pg.md, The bound). Default 100.
   */
  readonly flushUnits?: number | undefined;
  /** How stale a key's total read from the database may be when a check uses it, ms: an older one is read again first. Default 1000. */
  readonly cacheMs?: number | undefined;
  /** Each of the store's statements is given up after this many ms (a flush that times out is retried, and may then count twice: never under). Default 2000. */
  readonly queryTimeoutMs?: number | undefined;
  /** Keys are SHA-256 digests of the user key; with a secret, HMAC-SHA-256 digests. */
  readonly keySecret?: string | undefined;
  /** Deadline of one call in ms, enforced by the limiter (most checks answer from memory; a cache miss or a full batch waits for the database). Default 1000. */
  readonly deadlineMs?: number | undefined;
  /** Most checks in flight on this store at once. Default: the limiter's. */
  readonly maxInFlight?: number | undefined;
  /** How long the first checks wait for `ready()` (the table answers), ms. Default: the limiter's. */
  readonly startupWaitMs?: number | undefined;
  /** Circuit breaker settings for this store. Default: the limiter's. */
  readonly breaker?: BreakerOptions | undefined;
}

const OPTIONS: readonly string[] = ['pool', 'table', 'flushMs', 'flushUnits', 'cacheMs', 'queryTimeoutMs', 'keySecret', 'deadlineMs', 'maxInFlight', 'startupWaitMs', 'breaker'];

/** A clean entry not used for this long (ms) is dropped from memory; its next check reads the database again. */
const IDLE_MS = 60_000;

/** One key of one limit in one window: the database's total as last read, and this process's units not yet in it. */
interface Entry {
  readonly limitId: string;
  readonly keyHash: string;
  readonly window: number;
  readonly windowEnd: number;
  /** The database's `used` as last read (or returned by a flush); excludes `inflight` and `pending`. */
  known: number;
  /** Units being written by the flush in flight. */
  inflight: number;
  /** Units admitted (or given back, negative) since, not yet written. */
  pending: number;
  loaded: boolean;
  /** monotonicNow() of the last read or flush of this entry. */
  readAt: number;
  usedAt: number;
  loading: Promise<void> | undefined;
  /** Bumped when a flush takes this entry's units: a read issued before then is stale. */
  epoch: number;
}

function bad(option: string, message: string): ConfigError {
  return new ConfigError('RC_INVALID_OPTION', `pgQuotaStore.${option}`, message);
}

function positive(value: unknown, option: string, byDefault: number, integer = false): number {
  const v = value ?? byDefault;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || (integer && !Number.isSafeInteger(v))) {
    throw bad(option, `must be a positive ${integer ? 'integer' : 'number of ms'}, got ${typeof v === 'number' ? String(v) : typeof v}`);
  }
  return v;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = unrefTimer(setTimeout(() => reject(new RateContractError('RC_STORE_TIMEOUT', `pg quota store: ${what} did not answer within ${ms} ms`)), ms));
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

const windowOf = (t: number, windowMs: number): number => Math.floor(t / windowMs) * windowMs;

/**
 * A store for slow quotas (docs/pg.md): fixed-window counters in one
 * PostgreSQL table, increments batched per key in memory and written every
 * `flushMs` or `flushUnits` in one statement per flush, totals read through
 * a cache of stated staleness (`cacheMs`). Refuses, at the limiter's
 * construction, any limit that is not a fixed window of at least an hour.
 */
export class PgQuotaStore implements Store {
  readonly kind = 'pg';
  readonly table: string;
  readonly flushMs: number;
  readonly flushUnits: number;
  readonly cacheMs: number;
  readonly queryTimeoutMs: number;
  readonly deadlineMs: number;
  readonly maxInFlight: number | undefined;
  readonly startupWaitMs: number | undefined;
  readonly breaker: BreakerOptions | undefined;
  readonly #pool: PgQueryable;
  readonly #secret: string | undefined;
  readonly #entries = new Map<string, Entry>();
  #flushing: Promise<void> | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  constructor(options: PgQuotaStoreOptions) {
    if (options === null || typeof options !== 'object') throw new ConfigError('RC_INVALID_OPTION', 'pgQuotaStore', 'needs an options object with a pool');
    refuseUnknown(options, OPTIONS, 'pgQuotaStore');
    if (options.pool === null || typeof options.pool !== 'object' || typeof (options.pool as { query?: unknown }).query !== 'function') {
      throw bad('pool', 'is required: a pg.Pool (or anything with query(text, values) resolving { rows })');
    }
    this.#pool = options.pool;
    this.table = checkTableName(options.table ?? PG_QUOTA_STORE_DEFAULTS.table, 'pgQuotaStore.table');
    this.flushMs = positive(options.flushMs, 'flushMs', PG_QUOTA_STORE_DEFAULTS.flushMs);
    this.flushUnits = positive(options.flushUnits, 'flushUnits', PG_QUOTA_STORE_DEFAULTS.flushUnits, true);
    this.cacheMs = positive(options.cacheMs, 'cacheMs', PG_QUOTA_STORE_DEFAULTS.cacheMs);
    this.queryTimeoutMs = positive(options.queryTimeoutMs, 'queryTimeoutMs', PG_QUOTA_STORE_DEFAULTS.queryTimeoutMs);
    this.deadlineMs = positive(options.deadlineMs, 'deadlineMs', PG_QUOTA_STORE_DEFAULTS.deadlineMs);
    if (options.keySecret !== undefined && (typeof options.keySecret !== 'string' || options.keySecret === '')) throw bad('keySecret', 'must be a non-empty string');
    this.#secret = options.keySecret;
    this.maxInFlight = options.maxInFlight;
    this.startupWaitMs = options.startupWaitMs;
    this.breaker = options.breaker;
  }

  /** A fixed window of at least MIN_QUOTA_WINDOW_MS, every plan too; else why not. */
  accepts(limit: CompiledLimit): string | undefined {
    if (limit.algorithm !== 'fixed-window') {
      return `the PostgreSQL quota store holds fixed-window quotas only (one counter per key and window, written in batches), not ${limit.algorithm}: put request-rate limits on the memory or Redis store`;
    }
    const windows = [limit.params.windowMs, ...[...(limit.plans?.values() ?? [])].map((p) => p.params.windowMs)];
    const short = Math.min(...windows);
    if (short < MIN_QUOTA_WINDOW_MS) {
      return `its window (${short} ms) is under the store's minimum of ${MIN_QUOTA_WINDOW_MS} ms (1 hour): a database in the request path of every call makes the checking the DoS. The PostgreSQL store is for slow quotas (calls per day or month, checked against a cache); put request-rate limits on the memory or Redis store`;
    }
    return undefined;
  }

  /** The table's migration (`pgQuotaMigration(table)`), run on the pool. */
  async migrate(): Promise<void> {
    await this.#pool.query(pgQuotaMigration(this.table));
  }

  /** Resolves once the table answers; rejects naming the migration if it is missing. */
  async ready(): Promise<void> {
    try {
      await withTimeout(this.#pool.query(`SELECT 1 FROM ${this.table} LIMIT 1`), this.queryTimeoutMs, 'ready');
    } catch (error) {
      const missing = error instanceof Error && /does not exist/.test(error.message);
      throw new RateContractError('RC_STORE_NOT_READY', `pg quota store: ${missing ? `table ${this.table} does not exist: run pgQuotaMigration() (or store.migrate())` : `table ${this.table} did not answer`}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }

  async evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    if (ops.length === 0) return [];
    const entries = ops.map((op) => this.#entry(op, now));
    for (;;) {
      await this.#freshen(entries);
      // Room: no key may hold more than flushUnits units this process admitted and the database lacks.
      const full = ops.some((op, i) => {
        const e = entries[i] as Entry;
        const unflushed = e.pending + e.inflight;
        return op.cost > 0 && unflushed > 0 && unflushed + op.cost > this.flushUnits;
      });
      if (!full) break;
      await this.flush();
    }
    // From here to the return, nothing awaits: the decision and its bookkeeping are one step.
    const results = runChain(ops, now, this.#access(entries, true));
    for (const r of results) (r as { decidedAt?: number }).decidedAt = now;
    if (entries.some((e) => e.pending + e.inflight >= this.flushUnits)) void this.flush().catch(() => undefined);
    else if (entries.some((e) => e.pending !== 0)) this.#startTimer();
    return results;
  }

  async peek(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    if (ops.length === 0) return [];
    const entries = ops.map((op) => this.#entry(op, now));
    await this.#freshen(entries);
    const results = runChain(ops, now, this.#access(entries, false));
    for (const r of results) (r as { decidedAt?: number }).decidedAt = now;
    return results;
  }

  async refund(ops: readonly StoreOp[], now: number): Promise<void> {
    for (const op of ops) {
      const at = op.decidedAt ?? now;
      const e = this.#entry(op, at);
      await this.#freshen([e]);
      runRefund([op], at, this.#access([e], true));
    }
    this.#startTimer();
  }

  /** Fixed-window quotas hold no leases. */
  async release(): Promise<void> {}

  /** Forgets each op's key under its limit, every window (`limiter.reset`). */
  async clear(ops: readonly StoreOp[]): Promise<void> {
    if (ops.length === 0) return;
    await this.#flushing?.catch(() => undefined);
    const ids = ops.map((op) => op.spec.id);
    const hashes = ops.map((op) => this.#hash(op.key));
    await withTimeout(this.#pool.query(`DELETE FROM ${this.table} WHERE (limit_id, key_hash) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, [ids, hashes]), this.queryTimeoutMs, 'clear');
    const gone = new Set(ids.map((id, i) => `${id}\n${hashes[i] as string}\n`));
    for (const [k, e] of this.#entries) {
      if (!gone.has(`${e.limitId}\n${e.keyHash}\n`)) continue;
      e.known = 0;
      e.pending = 0;
      e.epoch++;
      e.readAt = monotonicNow();
      e.loaded = true;
      if (e.inflight === 0) this.#entries.delete(k);
    }
  }

  /**
   * Writes every key's unflushed units in one statement
   * (`INSERT ... ON CONFLICT DO UPDATE ... RETURNING`), whose answer is each
   * key's fresh total. One flush at a time; a flush while one runs waits
   * for it and then writes what is left. Rejects if the database does; the
   * units stay unflushed and go with the next flush.
   */
  async flush(): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing.catch(() => undefined);
    const dirty = [...this.#entries.values()].filter((e) => e.pending !== 0);
    this.#sweep();
    if (dirty.length === 0) return;
    const taken = dirty.map((e) => {
      const d = e.pending;
      e.pending = 0;
      e.inflight += d;
      e.epoch++;
      return d;
    });
    const run = (async () => {
      try {
        const { rows } = await withTimeout(
          this.#pool.query(
            `INSERT INTO ${this.table} AS q (limit_id, key_hash, window_start, used, expires_at)
SELECT l, k, w, GREATEST(u, 0), x FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) AS t(l, k, w, u, x)
ON CONFLICT (limit_id, key_hash, window_start) DO UPDATE SET used = GREATEST(q.used + EXCLUDED.used, 0)
RETURNING limit_id, key_hash, window_start, used`,
            [dirty.map((e) => e.limitId), dirty.map((e) => e.keyHash), dirty.map((e) => e.window), taken, dirty.map((e) => e.windowEnd)],
          ),
          this.queryTimeoutMs,
          'flush',
        );
        const totals = new Map<string, number>();
        for (const row of rows as ReadonlyArray<{ limit_id: string; key_hash: string; window_start: string | number; used: string | number }>) {
          totals.set(`${row.limit_id}\n${row.key_hash}\n${String(row.window_start)}`, Number(row.used));
        }
        const at = monotonicNow();
        dirty.forEach((e, i) => {
          e.inflight -= taken[i] as number;
          const total = totals.get(`${e.limitId}\n${e.keyHash}\n${e.window}`);
          if (total !== undefined && e.inflight === 0) {
            e.known = total;
            e.loaded = true;
            e.readAt = at;
          }
        });
      } catch (error) {
        // Not written, or not known to be: keep the units for the next flush (a flush that did commit then counts twice, never less).
        dirty.forEach((e, i) => {
          e.inflight -= taken[i] as number;
          e.pending += taken[i] as number;
        });
        throw new RateContractError('RC_STORE_FAILURE', `pg quota store: flush of ${dirty.length} keys failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
    })();
    this.#flushing = run;
    try {
      await run;
    } finally {
      if (this.#flushing === run) this.#flushing = undefined;
    }
  }

  /** Deletes the rows of windows that ended at or before `before` (ms since the epoch; default now); resolves how many. */
  async prune(before: number = Date.now()): Promise<number> {
    const r = await withTimeout(this.#pool.query(`DELETE FROM ${this.table} WHERE expires_at <= $1`, [before]), this.queryTimeoutMs, 'prune');
    return r.rowCount ?? 0;
  }

  /** Stops the flush timer and writes what is unflushed. The pool stays yours. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }

  /** Units of `limitId`/`key` this process holds unflushed (tests, docs/pg.md). */
  unflushed(op: Pick<StoreOp, 'spec' | 'key'>, now: number): number {
    const e = this.#entries.get(this.#entryKey(op.spec.id, this.#hash(op.key), windowOf(now, op.spec.params.windowMs)));
    return e === undefined ? 0 : e.pending + e.inflight;
  }

  #hash(key: string): string {
    const h = this.#secret === undefined ? crypto.createHash('sha256') : crypto.createHmac('sha256', this.#secret);
    return h.update(key, 'utf8').digest('base64url').slice(0, 22);
  }

  #entryKey(limitId: string, keyHash: string, window: number): string {
    return `${limitId}\n${keyHash}\n${window}`;
  }

  #entry(op: StoreOp, at: number): Entry {
    const windowMs = op.spec.params.windowMs;
    const window = windowOf(at, windowMs);
    const keyHash = this.#hash(op.key);
    const k = this.#entryKey(op.spec.id, keyHash, window);
    let e = this.#entries.get(k);
    if (e === undefined) {
      e = { limitId: op.spec.id, keyHash, window, windowEnd: window + windowMs, known: 0, inflight: 0, pending: 0, loaded: false, readAt: 0, usedAt: 0, loading: undefined, epoch: 0 };
      this.#entries.set(k, e);
    }
    e.usedAt = monotonicNow();
    return e;
  }

  /** Waits until every entry's total is at most cacheMs old: a read, or (for units being written) the flush in flight. */
  async #freshen(entries: readonly Entry[]): Promise<void> {
    for (;;) {
      const t = monotonicNow();
      const waits: Array<Promise<void>> = [];
      for (const e of entries) {
        if (e.loaded && t - e.readAt <= this.cacheMs) continue;
        if (e.inflight > 0) waits.push((this.#flushing ?? Promise.resolve()).catch(() => undefined));
        else waits.push(this.#load(e));
      }
      if (waits.length === 0) return;
      await Promise.all(waits);
    }
  }

  #load(e: Entry): Promise<void> {
    if (e.loading !== undefined) return e.loading;
    const epoch = e.epoch;
    const loading = withTimeout(
      this.#pool.query(`SELECT used FROM ${this.table} WHERE limit_id = $1 AND key_hash = $2 AND window_start = $3`, [e.limitId, e.keyHash, e.window]),
      this.queryTimeoutMs,
      'read',
    )
      .then(({ rows }) => {
        // A flush took this entry's units meanwhile: the read may or may not include them, so it is not used.
        if (e.epoch !== epoch || e.inflight !== 0) return;
        const row = rows[0] as { used: string | number } | undefined;
        e.known = row === undefined ? 0 : Number(row.used);
        e.loaded = true;
        e.readAt = monotonicNow();
      })
      .catch((error: unknown) => {
        throw new RateContractError('RC_STORE_FAILURE', `pg quota store: read failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      })
      .finally(() => {
        e.loading = undefined;
      });
    e.loading = loading;
    return loading;
  }

  /** runChain's view of the entries as fixed-window states `{ w, c }`; `write` false for peek. */
  #access(entries: readonly Entry[], write: boolean): StateAccess {
    return {
      get: (i) => {
        const e = entries[i] as Entry;
        const c = Math.max(0, e.known + e.inflight + e.pending);
        return c > 0 ? { w: e.window, c } : undefined;
      },
      set: (i, state) => {
        if (!write) return;
        const e = entries[i] as Entry;
        const before = Math.max(0, e.known + e.inflight + e.pending);
        const s = state as { w: number; c: number } | undefined;
        const after = s === undefined || s.w !== e.window ? 0 : s.c;
        e.pending += after - before;
      },
    };
  }

  #startTimer(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = unrefTimer(
      setInterval(() => {
        void this.flush().catch(() => undefined);
      }, this.flushMs),
    );
  }

  /** Drops clean entries not used for IDLE_MS or whose window has ended long ago. */
  #sweep(): void {
    const t = monotonicNow();
    for (const [k, e] of this.#entries) {
      if (e.pending !== 0 || e.inflight !== 0 || e.loading !== undefined) continue;
      if (t - e.usedAt > IDLE_MS) this.#entries.delete(k);
    }
  }
}

/** The PostgreSQL quota store (docs/pg.md). */
export function pgQuotaStore(options: PgQuotaStoreOptions): PgQuotaStore {
  return new PgQuotaStore(options);
}
