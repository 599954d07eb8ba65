import type { Clock } from '../../core/clock.js';
import { ConfigError, RateContractError } from '../../core/errors.js';
import { slotKey as slotKeyOf } from '../../core/request-key.js';
import { refuseUnknown } from '../../core/options.js';
import { storeErrorChannel } from '../../core/events.js';
import { DEFAULT_DEAD_CONNECTION_MS, DEFAULT_STARTUP_WAIT_MS, type BreakerOptions } from '../../core/store-circuit.js';
import type { Store, StoreOp, StoreOpResult } from '../../core/store.js';
import { endOfTick, unrefTimer } from '../../core/timers.js';
import { adaptClient, type ScriptRunner } from './client.js';
import { batchSize, REDIS_STORE_OPTIONS, type RedisStoreOptions } from './options.js';

export type { BatchOptions, RedisStoreOptions } from './options.js';
import { batchArgs, chainArgs, chainOfPeeks, decodeBatchReply, decodeChainReply, decodePeekReply, peekArgs, refundArgs, releaseArgs, type ChainCall, type ChainOpReply, type ChainReply } from './codec.js';
import { formatOneKey, stateKey } from './keys.js';
import { chainScript, clearScript, heartbeatScript, peekScript, refundScript, releaseScript } from './scripts.generated.js';
import { keySlot } from './slot.js';

/** One check waiting in the current batch. */
interface Queued extends ChainCall {
  readonly keys: readonly string[];
  readonly resolve: (results: StoreOpResult[]) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * `redisStore()`'s defaults (docs/redis.md and docs/config.md hold their
 * tables to these): `maxChecks` per batched script call is 16 with ioredis,
 * 64 with node-redis.
 */
export const REDIS_STORE_DEFAULTS = Object.freeze({ prefix: 'rc:', timeMode: 'server', ttlGraceMs: 0, maxChecks: 16, maxChecksNodeRedis: 64, onDeadConnection: 'reconnect' } as const);

const SCRIPTS = [chainScript, refundScript, releaseScript, heartbeatScript, peekScript, clearScript];

function strip(r: ChainOpReply, decidedAt: number): StoreOpResult {
  return { allowed: r.allowed, consumed: r.consumed, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, delayMs: r.delayMs, decidedAt };
}

/**
 * The Redis store: every algorithm runs as its Lua twin inside Redis, a whole
 * chain in one script (one round trip, atomic) on a standalone server. On a
 * Cluster the ops are grouped by hash slot, one script per group, and a
 * partial admission is compensated (see docs/redis.md for the guarantee).
 * Every key expires when its state is spent; user keys are hashed.
 */
export class RedisStore implements Store {
  readonly kind = 'redis';
  readonly prefix: string;
  readonly timeMode: 'server' | 'client';
  readonly deadlineMs: number | undefined;
  readonly maxInFlight: number | undefined;
  readonly startupWaitMs: number;
  readonly breaker: BreakerOptions | undefined;
  readonly deadConnectionMs: number | false;
  readonly onDeadConnection: 'reconnect' | 'report';
  readonly #runner: ScriptRunner;
  #becameReady: Promise<void> | undefined;
  readonly #clock: Clock | undefined;
  readonly #graceMs: number;
  readonly #secret: string | undefined;
  /** Most checks per script call; 1 when batching is off or on a Cluster. */
  readonly #maxChecks: number;
  /**
   * A Cluster: the master nodes a call for `ops` goes to (`'host:port'`, as
   * the client's slot table has them now), so that the limiter keeps a
   * breaker per master and one unreachable master sends to their fail mode
   * only the checks whose keys live on it. Undefined on a standalone server
   * (one failure domain, one breaker), and when the client does not know a
   * slot's master yet.
   */
  readonly domains: ((ops: readonly StoreOp[]) => readonly string[] | undefined) | undefined;
  /** A Cluster: after a failed call for `ops`, the masters whose part of it answered. */
  readonly answered: ((ops: readonly StoreOp[]) => readonly string[]) | undefined;
  /** A Cluster: each call's state keys, computed once for `domains` and `evaluate`. */
  readonly #keys = new WeakMap<readonly StoreOp[], string[]>();
  /** A Cluster: the masters that answered their part of a call (read by `answered` after a failure). */
  readonly #answered = new WeakMap<readonly StoreOp[], string[]>();
  /** Recent state keys: a key checked again skips its SHA-256 (about 0.4 us of the client's CPU per check). */
  readonly #keyCache = new KeyCache();
  #queue: Queued[] = [];
  #flushScheduled = false;
  readonly #flushTick = (): void => {
    this.#flushScheduled = false;
    this.#flush();
  };

  constructor(options: RedisStoreOptions) {
    if (options === null || typeof options !== 'object') throw new ConfigError('RC_INVALID_OPTION', 'redisStore', 'needs an options object with a client');
    refuseUnknown(options, REDIS_STORE_OPTIONS, 'redisStore');
    this.#runner = adaptClient(options.client, options.cluster);
    const prefix = options.prefix ?? REDIS_STORE_DEFAULTS.prefix;
    if (typeof prefix !== 'string') throw new ConfigError('RC_INVALID_OPTION', 'redisStore.prefix', `must be a string, got ${typeof prefix}`);
    this.prefix = prefix;
    const timeMode = options.timeMode ?? REDIS_STORE_DEFAULTS.timeMode;
    if (timeMode !== 'server' && timeMode !== 'client') {
      throw new ConfigError('RC_INVALID_OPTION', 'redisStore.timeMode', `must be 'server' or 'client', got ${JSON.stringify(timeMode)}`);
    }
    this.timeMode = timeMode;
    const grace = options.ttlGraceMs ?? REDIS_STORE_DEFAULTS.ttlGraceMs;
    if (!Number.isSafeInteger(grace) || grace < 0) throw new ConfigError('RC_INVALID_OPTION', 'redisStore.ttlGraceMs', `must be a non-negative integer, got ${String(grace)}`);
    if (timeMode === 'server' && (grace > 0 || options.clock !== undefined)) {
      throw new ConfigError('RC_INVALID_OPTION', grace > 0 ? 'redisStore.ttlGraceMs' : 'redisStore.clock', `applies to timeMode 'client' only`);
    }
    this.#graceMs = grace;
    this.#clock = options.clock;
    if (options.keySecret !== undefined && (typeof options.keySecret !== 'string' || options.keySecret === '')) {
      throw new ConfigError('RC_INVALID_OPTION', 'redisStore.keySecret', 'must be a non-empty string');
    }
    this.#secret = options.keySecret;
    this.deadlineMs = options.deadlineMs;
    this.maxInFlight = options.maxInFlight;
    const startupWaitMs = options.startupWaitMs ?? DEFAULT_STARTUP_WAIT_MS;
    if (!Number.isFinite(startupWaitMs) || startupWaitMs < 0) {
      throw new ConfigError('RC_INVALID_OPTION', 'redisStore.startupWaitMs', `must be a non-negative number, got ${String(startupWaitMs)}`);
    }
    this.startupWaitMs = startupWaitMs;
    this.breaker = options.breaker;
    const dead = options.deadConnectionMs ?? DEFAULT_DEAD_CONNECTION_MS;
    if (dead !== false && (typeof dead !== 'number' || !Number.isFinite(dead) || dead <= 0)) {
      throw new ConfigError('RC_INVALID_OPTION', 'redisStore.deadConnectionMs', `must be a positive number of ms or false, got ${String(dead)}`);
    }
    this.deadConnectionMs = dead;
    const onDead = options.onDeadConnection ?? REDIS_STORE_DEFAULTS.onDeadConnection;
    if (onDead !== 'reconnect' && onDead !== 'report') {
      throw new ConfigError('RC_INVALID_OPTION', 'redisStore.onDeadConnection', `must be 'reconnect' or 'report', got ${JSON.stringify(onDead)}`);
    }
    this.onDeadConnection = onDead;
    if (this.#runner.cluster) {
      this.domains = (ops) => this.#domains(ops);
      this.answered = (ops) => this.#answered.get(ops) ?? [];
    } else {
      this.domains = undefined;
      this.answered = undefined;
    }
    this.#maxChecks = this.#runner.cluster ? 1 : batchSize(options.batch, this.#runner.flavour === 'node-redis' ? REDIS_STORE_DEFAULTS.maxChecksNodeRedis : REDIS_STORE_DEFAULTS.maxChecks);
  }

  /**
   * The limiter found this store's connection silently dead (calls
   * outstanding for `deadConnectionMs`, not one reply): with
   * `onDeadConnection: 'reconnect'`, replaces it (see that option). With
   * `node`, a Cluster master whose calls fell silent while the others
   * answered: replaces that master's connection only (ioredis; node-redis
   * reports it). Returns whether it did; never throws.
   */
  reconnect(node?: string): boolean {
    if (this.onDeadConnection !== 'reconnect') return false;
    return node === undefined ? this.#runner.reconnect() : this.#runner.reconnectNode(node);
  }

  /** `'ioredis'` or `'node-redis'`, and whether keys are grouped by slot. */
  get clientInfo(): { readonly flavour: 'ioredis' | 'node-redis'; readonly cluster: boolean } {
    return { flavour: this.#runner.flavour, cluster: this.#runner.cluster };
  }

  /**
   * `keySlots`: the slot key of `key` among `slots`, by HMAC-SHA-256 with
   * `keySecret` (SHA-256 without one), the same in every process that shares
   * this Redis and secret. The slot key then goes through `keyFor` like any
   * key, so it takes the prefix's hash tag on a Cluster.
   */
  slotKey(key: string, slots: number): string {
    return slotKeyOf(key, slots, this.#secret);
  }

  /** The Redis key holding the state of `key` under the limit `limitId` (a limit's `id`). */
  keyFor(limitId: string, key: string): string {
    return this.#keyCache.get(limitId, key) ?? this.#keyCache.set(limitId, key, stateKey(this.prefix, limitId, key, this.#secret));
  }

  /** The state keys of `ops` (on a Cluster computed once per call, shared with `domains`). */
  #keysOf(ops: readonly StoreOp[]): string[] {
    let keys = this.#keys.get(ops);
    if (keys === undefined) {
      keys = ops.map((op) => this.keyFor(op.spec.id, op.key));
      this.#keys.set(ops, keys);
    }
    return keys;
  }

  #domains(ops: readonly StoreOp[]): readonly string[] | undefined {
    const keys = this.#keysOf(ops);
    const prefix = this.#runner.clientKeyPrefix;
    let names: string[] | undefined;
    for (const k of keys) {
      const node = this.#runner.nodeOf(keySlot(prefix + k));
      if (node === undefined) return undefined;
      if (names === undefined) names = [node];
      else if (!names.includes(node)) names.push(node);
    }
    return names;
  }

  evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    // Not an async function: a batched check costs one promise (the batch's settlement of it), not two.
    try {
      if (ops.length === 0) return Promise.resolve([]);
      if (this.#maxChecks > 1) return this.#enqueue(ops, this.#clientNow(now));
      return this.#evaluateUnbatched(ops, now);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Queues one check for the next batch (sent when it is full, or at the end of this tick). */
  #enqueue(ops: readonly StoreOp[], at: number | undefined): Promise<StoreOpResult[]> {
    const n = ops.length;
    const keys = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      const op = ops[i] as StoreOp;
      keys[i] = this.keyFor(op.spec.id, op.key);
    }
    return new Promise<StoreOpResult[]>((resolve, reject) => {
      this.#queue.push({ ops, now: at, keys, resolve, reject });
      if (this.#queue.length >= this.#maxChecks) {
        this.#flush();
      } else if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        endOfTick(this.#flushTick);
      }
    });
  }

  async #evaluateUnbatched(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    const keys = this.#runner.cluster ? this.#keysOf(ops) : ops.map((op) => this.keyFor(op.spec.id, op.key));
    const at = this.#clientNow(now);
    const groups = this.#groupBySlot(keys);
    if (groups.length === 1) {
      const reply = decodeChainReply(await this.#runner.run(chainScript, keys, chainArgs(ops, at, this.#graceMs, false)), ops, at, false);
      return reply.results.map((r) => strip(r, reply.now));
    }
    return this.#evaluateGroups(ops, keys, groups, at);
  }

  /** Sends the queued checks as one chain.lua call and settles each with its own chain's results. */
  #flush(): void {
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#queue = [];
    const keys: string[] = [];
    for (const q of batch) for (const k of q.keys) keys.push(k);
    let call: Promise<unknown>;
    try {
      call = this.#runner.run(chainScript, keys, batchArgs(batch, this.#graceMs, false));
    } catch (error) {
      for (const q of batch) q.reject(error);
      return;
    }
    call.then(
      (reply) => {
        let chains;
        try {
          chains = decodeBatchReply(reply, batch, false);
        } catch (error) {
          for (const q of batch) q.reject(error);
          return;
        }
        for (let j = 0; j < batch.length; j++) {
          const q = batch[j] as Queued;
          const c = chains[j] as ChainReply;
          const rs = c.results;
          const out = new Array<StoreOpResult>(rs.length);
          for (let i = 0; i < rs.length; i++) {
            out[i] = strip(rs[i] as ChainOpReply, c.now);
          }
          q.resolve(out);
        }
      },
      (error: unknown) => {
        for (const q of batch) q.reject(error);
      },
    );
  }

  async refund(ops: readonly StoreOp[], now: number): Promise<void> {
    if (ops.length === 0) return;
    const fallback = this.#clientNow(now);
    await this.#refund(
      ops,
      ops.map((op) => this.keyFor(op.spec.id, op.key)),
      ops.map((op) => op.decidedAt ?? fallback),
    );
  }

  /**
   * What `evaluate(ops, now)` would answer, changing nothing (peek.lua: no
   * write, no TTL refresh, no lease taken). On a Cluster, one script per
   * slot group and the chain rule applied across them.
   */
  async peek(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    if (ops.length === 0) return [];
    const keys = ops.map((op) => this.keyFor(op.spec.id, op.key));
    const at = this.#clientNow(now);
    const replies = new Array<ChainOpReply>(ops.length);
    await Promise.all(
      this.#groupBySlot(keys).map(async (idx) => {
        const reply = decodePeekReply(
          await this.#runner.run(
            peekScript,
            idx.map((i) => keys[i] as string),
            peekArgs(
              idx.map((i) => ops[i] as StoreOp),
              at,
            ),
          ),
          idx.length,
        );
        idx.forEach((i, j) => (replies[i] = reply.results[j] as ChainOpReply));
      }),
    );
    return chainOfPeeks(ops, replies);
  }

  /**
   * Deletes the state of each op's key (`limiter.reset`), in this state
   * format's namespace and in format 1's (so a reset during a rolling deploy
   * also clears what processes of the previous release count); on a Cluster
   * one call per slot group.
   */
  async clear(ops: readonly StoreOp[]): Promise<void> {
    if (ops.length === 0) return;
    const keys = ops.map((op) => this.keyFor(op.spec.id, op.key));
    for (const op of ops) keys.push(formatOneKey(this.prefix, op.spec.id, op.key, this.#secret));
    await Promise.all(this.#groupBySlot(keys).map((idx) => this.#runner.run(clearScript, idx.map((i) => keys[i] as string), [])));
  }

  async release(op: StoreOp, now: number): Promise<void> {
    if (op.leaseId === undefined) return;
    await this.#runner.run(releaseScript, [this.keyFor(op.spec.id, op.key)], releaseArgs(op, this.#clientNow(now), this.#graceMs));
  }

  /**
   * Loads every script on the server (on every master of a Cluster) with
   * SCRIPT LOAD. Rejects if a node cannot be reached. `ready()` does this
   * for you, and retries until it works.
   */
  async preload(): Promise<void> {
    await this.#runner.preload(SCRIPTS);
  }

  /**
   * Resolves once the store can decide: the client is connected and every
   * script is loaded. The limiter starts this when it is created and holds
   * the first checks until it resolves (up to `startupWaitMs`), so a new
   * process decides from its first check; await it yourself to wait before
   * a server listens. Keeps trying while Redis is unreachable; with
   * `timeoutMs`, rejects with `RC_STORE_NOT_READY` after that long (the
   * store keeps trying in the background). Rejects at once if the client
   * has ended.
   */
  ready(options?: { readonly timeoutMs?: number | undefined }): Promise<void> {
    const wait = options?.timeoutMs;
    if (wait !== undefined && (!Number.isFinite(wait) || wait < 0)) {
      throw new ConfigError('RC_INVALID_OPTION', 'ready.timeoutMs', `must be a non-negative number, got ${String(wait)}`);
    }
    let becoming = this.#becameReady;
    if (becoming === undefined) {
      becoming = this.#becameReady = this.#becomeReady();
      // Observed by every caller; this keeps an unobserved failure (an ended client) from being an unhandled rejection.
      becoming.catch(() => undefined);
    }
    if (wait === undefined) return becoming;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new RateContractError('RC_STORE_NOT_READY', `redis store not ready after ${wait} ms`)), wait);
      unrefTimer(timer);
      becoming.then(
        () => {
          clearTimeout(timer);
          resolve();
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  /** Tries SCRIPT LOAD until it works: again when the client reports ready, or after a capped backoff. */
  async #becomeReady(): Promise<void> {
    let ended = false;
    const stopWatching = this.#runner.onceEnded(() => (ended = true));
    try {
      for (let backoffMs = 25; ; backoffMs = Math.min(backoffMs * 2, 1000)) {
        try {
          await this.#runner.preload(SCRIPTS);
          return;
        } catch (error) {
          if (ended) throw new RateContractError('RC_STORE_NOT_READY', 'redis store: the client has ended', { cause: error });
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, backoffMs);
          unrefTimer(timer);
          const stopReady = this.#runner.onceReady(done);
          const stopEnd = this.#runner.onceEnded(done);
          function done(): void {
            clearTimeout(timer);
            stopReady();
            stopEnd();
            resolve();
          }
        });
        if (ended) throw new RateContractError('RC_STORE_NOT_READY', 'redis store: the client has ended');
      }
    } finally {
      stopWatching();
    }
  }

  /**
   * Replica discovery (`createLimiter({ replicas: 'discover' })`): records
   * that `instanceId` is alive for `ttlMs` in the sorted set
   * `<prefix>replicas` and resolves with the number of live instances.
   */
  async heartbeat(instanceId: string, ttlMs: number, now: number): Promise<number> {
    const at = this.#clientNow(now);
    const reply = await this.#runner.run(heartbeatScript, [`${this.prefix}replicas`], [at === undefined ? '' : String(at), instanceId, String(ttlMs)]);
    const count = Number(reply);
    if (!Number.isSafeInteger(count)) throw new RateContractError('RC_STORE_FAILURE', 'redis store: malformed heartbeat reply');
    return count;
  }

  /** The time to decide at: undefined (the server's clock) in server-time mode. */
  #clientNow(now: number): number | undefined {
    if (this.timeMode === 'server') return undefined;
    return this.#clock === undefined ? now : this.#clock.now();
  }

  /** Op indexes grouped by hash slot, in chain order; one group on a standalone server. */
  #groupBySlot(keys: readonly string[]): number[][] {
    const all = keys.map((_, i) => i);
    if (!this.#runner.cluster) return [all];
    const prefix = this.#runner.clientKeyPrefix;
    const bySlot = new Map<number, number[]>();
    keys.forEach((k, i) => {
      const slot = keySlot(prefix + k);
      const g = bySlot.get(slot);
      if (g === undefined) bySlot.set(slot, [i]);
      else g.push(i);
    });
    return bySlot.size === 1 ? [all] : [...bySlot.values()];
  }

  /**
   * Cluster, keys in several slots: one chain script per slot group, in
   * parallel. If the chain as a whole rejects, the groups that admitted give
   * back what they consumed (except limits that count rejected attempts) and
   * report the unconsumed (peek) figures, exactly as one atomic chain would.
   */
  async #evaluateGroups(ops: readonly StoreOp[], keys: readonly string[], groups: number[][], at: number | undefined): Promise<StoreOpResult[]> {
    const n = ops.length;
    const out = new Array<ChainOpReply | undefined>(n);
    const decidedAt = new Array<number | undefined>(n);
    const settled = await Promise.allSettled(
      groups.map(async (idx) => {
        const gOps = idx.map((i) => ops[i] as StoreOp);
        const gKeys = idx.map((i) => keys[i] as string);
        const reply = decodeChainReply(await this.#runner.run(chainScript, gKeys, chainArgs(gOps, at, this.#graceMs, true)), gOps, at, true);
        this.#answer(ops, keys[idx[0] as number] as string);
        idx.forEach((i, j) => {
          out[i] = reply.results[j];
          decidedAt[i] = reply.now;
        });
      }),
    );
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failure !== undefined) {
      // Undo what the groups that answered consumed, then fail the whole call.
      await this.#compensate(ops, keys, decidedAt, (i) => out[i]?.consumed === true);
      throw failure.reason;
    }
    const results = out as ChainOpReply[];
    const chainAllowed = results.every((r, i) => r.allowed || (ops[i] as StoreOp).spec.shadow);
    if (chainAllowed) return results.map((r, i) => strip(r, decidedAt[i] as number));
    const give = (i: number): boolean => (results[i] as ChainOpReply).consumed && !(ops[i] as StoreOp).spec.countRejected;
    await this.#compensate(ops, keys, decidedAt, give);
    return results.map((r, i) =>
      give(i) ? { allowed: true, consumed: false, remaining: r.peekRemaining, resetMs: r.peekResetMs, retryAfterMs: 0, delayMs: 0, decidedAt: decidedAt[i] } : strip(r, decidedAt[i] as number),
    );
  }

  /** Notes that the master serving `key` answered its part of the call for `ops`. */
  #answer(ops: readonly StoreOp[], key: string): void {
    const node = this.#runner.nodeOf(keySlot(this.#runner.clientKeyPrefix + key));
    if (node === undefined) return;
    const seen = this.#answered.get(ops);
    if (seen === undefined) this.#answered.set(ops, [node]);
    else if (!seen.includes(node)) seen.push(node);
  }

  async #compensate(ops: readonly StoreOp[], keys: readonly string[], decidedAt: ReadonlyArray<number | undefined>, pick: (i: number) => boolean): Promise<void> {
    const idx = ops.map((_, i) => i).filter(pick);
    if (idx.length === 0) return;
    try {
      await this.#refund(
        idx.map((i) => ops[i] as StoreOp),
        idx.map((i) => keys[i] as string),
        idx.map((i) => decidedAt[i]),
      );
    } catch (error) {
      // What was not given back expires with its key: the error is on the side of rejecting.
      if (storeErrorChannel.hasSubscribers) storeErrorChannel.publish({ store: this.kind, kind: this.kind, reason: 'error', error, limits: idx.map((i) => (ops[i] as StoreOp).spec.name) });
    }
  }

  async #refund(ops: readonly StoreOp[], keys: readonly string[], nows: ReadonlyArray<number | undefined>): Promise<void> {
    await Promise.all(
      this.#groupBySlot(keys).map((idx) =>
        this.#runner.run(
          refundScript,
          idx.map((i) => keys[i] as string),
          refundArgs(
            idx.map((i) => ops[i] as StoreOp),
            idx.map((i) => nows[i]),
            this.#graceMs,
          ),
        ),
      ),
    );
  }
}

/**
 * The state keys of recently checked keys, per limit id, so that a key
 * checked again skips its digest. Bounded (`KEY_CACHE_MAX` entries, all
 * dropped when full) and self-disabling: when a fill of the cache saw fewer
 * hits than a quarter of its misses (keys rarely repeat, e.g. 100,000 keys
 * round-robin), it stops caching for the next `KEY_CACHE_REST` lookups, so
 * that such a workload pays a counter, not a map insertion per check.
 */
const KEY_CACHE_MAX = 4096;
const KEY_CACHE_REST = 65_536;
class KeyCache {
  readonly #byLimit = new Map<string, Map<string, string>>();
  #size = 0;
  #hits = 0;
  #misses = 0;
  /** Lookups left before caching is tried again (0: caching). */
  #resting = 0;

  get(limitId: string, key: string): string | undefined {
    if (this.#resting > 0) {
      this.#resting--;
      return undefined;
    }
    const hit = this.#byLimit.get(limitId)?.get(key);
    if (hit === undefined) this.#misses++;
    else this.#hits++;
    return hit;
  }

  set(limitId: string, key: string, value: string): string {
    if (this.#resting > 0) return value;
    if (this.#size >= KEY_CACHE_MAX) {
      if (this.#hits * 4 < this.#misses) this.#resting = KEY_CACHE_REST;
      this.#byLimit.clear();
      this.#size = this.#hits = this.#misses = 0;
      if (this.#resting > 0) return value;
    }
    let m = this.#byLimit.get(limitId);
    if (m === undefined) this.#byLimit.set(limitId, (m = new Map<string, string>()));
    m.set(key, value);
    this.#size++;
    return value;
  }
}

/** Creates a Redis store over your ioredis or node-redis client. See `RedisStore` and docs/redis.md. */
export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options);
}
