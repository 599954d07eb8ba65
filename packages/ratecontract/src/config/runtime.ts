import { randomBytes } from 'node:crypto';
// The defining modules of public names only (`ratecontract`, `ratecontract/http`, `ratecontract/redis`): what serve builds on, users can build on.
import type { Clock } from '../core/clock.js';
import { parseDuration } from '../core/duration.js';
import { ConfigError } from '../core/errors.js';
import type { Limiter } from '../core/limiter.js';
import type { Store } from '../core/store.js';
import type { LimitDefinition } from '../core/types.js';
import type { GuardOptions } from '../http/guard.js';
import { createLimiter } from '../limiter.js';
import { memoryStore } from '../stores/memory/memory-store.js';
import { redisStore } from '../stores/redis/redis-store.js';
import type { RedisClientLike } from '../stores/redis/client.js';
import { RouteTable, type RouteMatch } from './route-pattern.js';
import type { RateContractConfig, RedisStoreConfig, RouteConfig, StoreConfig } from './types.js';

/** A Redis client the runtime made and will close. */
export interface OwnedRedisClient {
  readonly client: RedisClientLike;
  /** Closes the connection. */
  close(): Promise<void>;
}

/** Options of `buildRuntime`. */
export interface RuntimeOptions {
  /**
   * Connects to a Redis store's URL. Default: ioredis (an optional peer
   * dependency), `new Redis(url)`, or `new Cluster([url])` with `cluster: true`.
   */
  readonly connectRedis?:
    | ((url: string, store: RedisStoreConfig, name: string, onClientError: (error: unknown) => void) => OwnedRedisClient | Promise<OwnedRedisClient>)
    | undefined;
  /** Time source of every limiter. Default the system clock. */
  readonly clock?: Clock | undefined;
  /** Connection errors of the Redis clients the runtime opened (the limiter's fail modes decide meanwhile). Default: ignored. */
  readonly onRedisError?: ((store: string, error: unknown) => void) | undefined;
  /** With `replicas: discover`: heartbeat period, ms. Default 5000. */
  readonly heartbeatMs?: number | undefined;
  /**
   * Every store is a memory store of this process: a memory store keeps its
   * `maxKeys` and `overflowSlots`, a Redis store becomes `memoryStore()` with
   * its defaults, and no connection is made (`connectRedis` is never called).
   * With `replicas: discover` this one process is the only replica. For
   * offline runs (`ratecontract replay`) on a virtual clock. Default false.
   */
  readonly memoryStores?: boolean | undefined;
  /**
   * The runtime this one replaces (a config reload). Every store whose
   * definition is unchanged (same name, same settings) is taken over with its
   * state and its Redis connection, so limits on it keep their budgets; the
   * previous runtime's `close()` then leaves those open. Default: none.
   */
  readonly previous?: ContractRuntime | undefined;
}

/** One route, ready to check requests. */
export interface RuntimeRoute {
  readonly config: RouteConfig;
  /** Position in the file's `routes`. */
  readonly index: number;
  /** The chain's limiter; `undefined` for a route marked `limits: []` (explicitly unlimited). */
  readonly limiter: Limiter | undefined;
}

/** The runtime objects a config describes, built with the library's public API. */
export interface ContractRuntime {
  readonly config: RateContractConfig;
  /** Every store by name; `(default)` is the store of limits without `store`. */
  readonly stores: ReadonlyMap<string, Store>;
  readonly routes: readonly RuntimeRoute[];
  /** The most specific route for a request, or `undefined` when no route matches (such a request is not limited). */
  route(method: string, path: string): RouteMatch<RuntimeRoute> | undefined;
  /** The `http` section as adapter options (`identify` is left to the caller: see `config.http.identify`). */
  readonly guardOptions: Pick<GuardOptions<unknown>, 'trustProxy' | 'forwardedHeader' | 'ipv6Prefix' | 'ipv4Prefix' | 'advertise' | 'fields' | 'legacyHeaders' | 'advertiseCapacity' | 'windowCap' | 'maxBodyBytes'>;
  /** Stops the limiters' background work and closes the Redis clients the runtime opened. */
  close(): Promise<void>;
}

type IoredisClient = RedisClientLike & { quit(): Promise<unknown>; on(event: 'error', listener: (error: unknown) => void): unknown };

interface IoredisModule {
  readonly default: new (url: string, options?: Record<string, unknown>) => IoredisClient;
  readonly Cluster: new (nodes: string[], options?: Record<string, unknown>) => IoredisClient;
}

/** What a runtime can hand over to its successor: its stores by name, with their definitions and connections. */
interface Handover {
  readonly stores: Map<string, { readonly config: StoreConfig | 'implicit'; readonly store: Store; readonly owned: OwnedRedisClient | undefined }>;
  /** Names taken over by a successor: not closed by this runtime's `close()`. */
  readonly taken: Set<string>;
}

const handovers = new WeakMap<ContractRuntime, Handover>();

/** A Redis store's `keySecret` from the environment variable the file names; refuses an unset or empty one. */
function envSecret(variable: string, store: string): string {
  const v = process.env[variable];
  if (v === undefined || v === '') throw new ConfigError('RC_INVALID_OPTION', `stores.${store}.keySecretEnv`, `the environment variable ${variable} is unset or empty`);
  return v;
}

function sameStore(a: StoreConfig | 'implicit', b: StoreConfig | 'implicit'): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

async function connectWithIoredis(url: string, store: RedisStoreConfig, _name: string, onClientError: (error: unknown) => void): Promise<OwnedRedisClient> {
  const name = 'ioredis';
  let mod: IoredisModule;
  try {
    mod = (await import(name)) as IoredisModule;
  } catch (error) {
    throw new Error('a redis store needs the ioredis package: npm install ioredis', { cause: error });
  }
  // Commands fail fast while disconnected, so the limiter's fail modes decide instead of a growing queue.
  const options = { maxRetriesPerRequest: 1, enableOfflineQueue: true };
  const client = store.cluster === true ? new mod.Cluster([url], { redisOptions: options }) : new mod.default(url, options);
  client.on('error', onClientError);
  return {
    client,
    close: async () => {
      await client.quit().catch(() => undefined);
    },
  };
}

/**
 * `replicas: discover` with one limiter per route: every limiter would
 * register its own heartbeat and k would count routes x replicas. The
 * runtime gives every limiter a default store whose heartbeat speaks for the
 * whole process, under one instance id.
 */
function processHeartbeat(store: Store, heartbeatStore: Store): Store {
  const id = randomBytes(9).toString('base64url');
  const beat = heartbeatStore.heartbeat?.bind(heartbeatStore);
  return {
    kind: store.kind,
    evaluate: (ops, now) => store.evaluate(ops, now),
    refund: (ops, now) => store.refund(ops, now),
    release: (op, now) => store.release(op, now),
    deadlineMs: store.deadlineMs,
    breaker: store.breaker,
    ...(beat !== undefined && { heartbeat: (_instanceId: string, ttlMs: number, now: number) => beat(id, ttlMs, now) }),
  };
}

/**
 * Builds the stores, one limiter per route chain (limits shared between
 * routes share their state in the store) and the route table. Limits without
 * `store` use `stores.default` when the file defines it, else one memory
 * store of this process. With `replicas: discover`, heartbeats go to
 * `stores.default` when it is a Redis store, else to the first Redis store.
 */
export async function buildRuntime(config: RateContractConfig, options: RuntimeOptions = {}): Promise<ContractRuntime> {
  const connect = options.connectRedis ?? connectWithIoredis;
  const owned: OwnedRedisClient[] = [];
  const stores: Record<string, Store> = {};
  const previous = options.previous === undefined ? undefined : handovers.get(options.previous);
  const mine: Handover = { stores: new Map(), taken: new Set() };
  const takenNames: string[] = [];
  const takenOwned = new Set<OwnedRedisClient>();
  /** Takes over the previous runtime's store `name` when its definition is unchanged. */
  const takeOver = (name: string, def: StoreConfig | 'implicit'): Store | undefined => {
    const old = previous?.stores.get(name);
    if (old === undefined || previous === undefined || previous.taken.has(name) || !sameStore(old.config, def)) return undefined;
    previous.taken.add(name);
    takenNames.push(name);
    if (old.owned !== undefined) {
      owned.push(old.owned);
      takenOwned.add(old.owned);
    }
    mine.stores.set(name, old);
    return old.store;
  };
  try {
    for (const [name, s] of Object.entries(config.stores)) {
      if (s.type !== 'memory' && options.memoryStores === true) {
        stores[name] = memoryStore();
        continue;
      }
      const kept = takeOver(name, s);
      if (kept !== undefined) {
        stores[name] = kept;
        continue;
      }
      if (s.type === 'memory') {
        stores[name] = memoryStore({ ...(s.maxKeys !== undefined && { maxKeys: s.maxKeys }), ...(s.overflowSlots !== undefined && { overflowSlots: s.overflowSlots }) });
        mine.stores.set(name, { config: s, store: stores[name], owned: undefined });
        continue;
      }
      const c = await connect(s.url, s, name, (error) => options.onRedisError?.(name, error));
      owned.push(c);
      const store = redisStore({
        client: c.client,
        ...(s.prefix !== undefined && { prefix: s.prefix }),
        ...(s.timeMode !== undefined && { timeMode: s.timeMode }),
        ...(s.cluster !== undefined && { cluster: s.cluster }),
        ...(s.keySecretEnv !== undefined && { keySecret: envSecret(s.keySecretEnv, name) }),
        ...(s.deadline !== undefined && { deadlineMs: parseDuration(s.deadline, `stores.${name}.deadline`) }),
        ...(s.breaker !== undefined && {
          breaker: {
            ...(s.breaker.failureThreshold !== undefined && { failureThreshold: s.breaker.failureThreshold }),
            ...(s.breaker.cooldown !== undefined && { cooldownMs: parseDuration(s.breaker.cooldown, `stores.${name}.breaker.cooldown`) }),
          },
        }),
      });
      stores[name] = store;
      mine.stores.set(name, { config: s, store, owned: c });
    }
  } catch (error) {
    // Give back what was taken over: the previous runtime still runs on it.
    for (const name of takenNames) previous?.taken.delete(name);
    await Promise.all(owned.filter((c) => !takenOwned.has(c)).map((c) => c.close()));
    throw error;
  }
  let defaultStore: Store;
  if (stores.default !== undefined) defaultStore = stores.default;
  else {
    defaultStore = takeOver('(default)', 'implicit') ?? memoryStore();
    mine.stores.set('(default)', { config: 'implicit', store: defaultStore, owned: undefined });
  }
  if (config.replicas === 'discover') {
    const redisNames = Object.keys(config.stores).filter((n) => config.stores[n]?.type === 'redis');
    const hbName = config.stores.default?.type === 'redis' ? 'default' : redisNames[0];
    const hb = hbName === undefined ? undefined : stores[hbName];
    if (hb !== undefined) defaultStore = processHeartbeat(defaultStore, hb);
  }
  const byName = new Map<string, LimitDefinition>(config.limits.map((l) => [l.name, l]));
  const limiters: Limiter[] = [];
  const routes = config.routes.map((r, index): RuntimeRoute => {
    if (r.limits.length === 0) return { config: r, index, limiter: undefined };
    const limiter = createLimiter({
      limits: r.limits.map((n) => byName.get(n) as LimitDefinition),
      defaultStore: defaultStore,
      stores,
      replicas: config.replicas,
      ...(options.clock !== undefined && { clock: options.clock }),
      ...(options.heartbeatMs !== undefined && { heartbeatMs: options.heartbeatMs }),
    });
    limiters.push(limiter);
    return { config: r, index, limiter };
  });
  const table = new RouteTable(routes.map((r) => ({ pattern: r.config.pattern, value: r })));
  const h = config.http;
  const storeMap = new Map<string, Store>(Object.entries(stores));
  if (stores.default === undefined) storeMap.set('(default)', defaultStore);
  const runtime: ContractRuntime = {
    config,
    stores: storeMap,
    routes,
    route: (method, path) => table.match(method, path),
    guardOptions: {
      ...(h.trustProxy !== undefined && { trustProxy: h.trustProxy }),
      ...(h.forwardedHeader !== undefined && { forwardedHeader: h.forwardedHeader }),
      ...(h.ipv6Prefix !== undefined && { ipv6Prefix: h.ipv6Prefix }),
      ...(h.ipv4Prefix !== undefined && { ipv4Prefix: h.ipv4Prefix }),
      ...(h.advertise !== undefined && { advertise: h.advertise }),
      ...(h.fields !== undefined && { fields: h.fields }),
      ...(h.legacyHeaders !== undefined && { legacyHeaders: h.legacyHeaders }),
      ...(h.advertiseCapacity !== undefined && { advertiseCapacity: h.advertiseCapacity }),
      ...(h.windowCap !== undefined && { windowCap: h.windowCap }),
      ...(h.maxBodyBytes !== undefined && { maxBodyBytes: h.maxBodyBytes }),
    },
    close: async () => {
      // Unspent two-tier allotments go back before the clients they go back through are closed.
      await Promise.all(limiters.map((l) => l.close()));
      const handedOn = new Set([...mine.taken].map((name) => mine.stores.get(name)?.owned));
      await Promise.all(owned.filter((c) => !handedOn.has(c)).map((c) => c.close()));
    },
  };
  handovers.set(runtime, mine);
  return runtime;
}
