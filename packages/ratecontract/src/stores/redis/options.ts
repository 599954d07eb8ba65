import type { Clock } from '../../core/clock.js';
import { ConfigError } from '../../core/errors.js';
import type { BreakerOptions } from '../../core/store-circuit.js';
import type { RedisClientLike } from './client.js';

/** Options of `redisStore()`. */
export interface RedisStoreOptions {
  /**
   * Your client, connected: ioredis `new Redis()` / `new Cluster()`, or
   * node-redis `createClient()` / `createCluster()` (v4 or v5). The store
   * never imports a Redis client and never closes yours.
   */
  readonly client: RedisClientLike;
  /**
   * Prepended to every key. Default `'rc:'`. On a Cluster, a hash tag in the
   * prefix (`'rc:{limits}:'`) pins every key to one slot: each chain is then
   * one atomic script, at the price of one shard doing all the work.
   */
  readonly prefix?: string | undefined;
  /**
   * `'server'` (default): decide at the Redis server's clock (`TIME` in the
   * script), so replicas with skewed clocks decide identically.
   * `'client'`: decide at the `now` the limiter passes (its clock), for
   * managed Redis that forbids `TIME` and for deterministic tests.
   */
  readonly timeMode?: 'server' | 'client' | undefined;
  /** `'client'` time mode only: read time from this clock instead of the `now` each call passes. */
  readonly clock?: Clock | undefined;
  /**
   * `'client'` time mode only: ms added to every TTL, for clients whose clock
   * does not run at the server's pace (a manual clock in tests). Default 0.
   */
  readonly ttlGraceMs?: number | undefined;
  /** Keys are SHA-256 digests of the user key; with a secret, HMAC-SHA-256 digests (not reversible by guessing identifiers). */
  readonly keySecret?: string | undefined;
  /** Overrides Cluster detection (group keys by hash slot or not). */
  readonly cluster?: boolean | undefined;
  /** Deadline of one call in ms, enforced by the limiter. Default 20 (see docs/fail-modes.md for the measurement). */
  readonly deadlineMs?: number | undefined;
  /**
   * Most checks in flight on this store at once; a check beyond it is
   * decided by its limits' fail modes at once rather than queued behind the
   * others (a `busy` store error). Default 1000.
   */
  readonly maxInFlight?: number | undefined;
  /**
   * How long checks made before the store is ready (client connected,
   * scripts loaded) wait for it, ms from the limiter's creation; after that
   * they get their limits' fail modes while the store keeps trying to
   * become ready. Also the default timeout of `ready()`. Default 1000.
   */
  readonly startupWaitMs?: number | undefined;
  /** Circuit breaker settings for this store (failure domain). Default: the limiter's. */
  readonly breaker?: BreakerOptions | undefined;
  /**
   * A connection that died silently (no FIN, no RST: a NAT or load balancer
   * that forgot the flow, a failover behind a virtual IP) never answers and
   * never errors until TCP gives up, minutes later. When the store's calls
   * have been outstanding this long (ms, on the limiter's clock) with not one
   * reply, in time or late, the limiter takes the connection for dead: it
   * does `onDeadConnection` and publishes `ratecontract:dead-connection`, at
   * most once per this period while the silence lasts. A slow Redis is not
   * silent (its late replies arrive); a paused or blocked one is, and is
   * treated the same. `false`: never. Default 2000.
   */
  readonly deadConnectionMs?: number | false | undefined;
  /**
   * What the store does with a connection taken for dead (see
   * `deadConnectionMs`). `'reconnect'` (default): replace it, on a
   * standalone client that still reports itself ready; ioredis
   * `disconnect(true)` with the old socket destroyed at once, node-redis
   * (which has no reconnect call) `destroy()` then `connect()`, so your
   * client emits `'end'` and `'ready'`. Whatever else was outstanding on
   * that connection fails, or with ioredis's default
   * `autoResendUnfulfilledCommands` is sent again on the new one.
   * `'report'`: only publish `ratecontract:dead-connection` and leave the
   * client alone (replace the connection yourself). On a Cluster the store
   * only reports.
   */
  readonly onDeadConnection?: 'reconnect' | 'report' | undefined;
  /**
   * Batching of checks on a standalone server. Checks that arrive in the
   * same tick of the event loop (before `process.nextTick` runs) are sent as
   * one script call that decides them in arrival order, each chain still
   * atomic and all-or-nothing: the same decisions as one call per check,
   * with one round trip and one script start per batch instead of per check.
   * A batch fails or times out as a whole. `false` sends one script call per
   * check. Default `{ maxChecks: 16 }` with ioredis, 64 with node-redis
   * (see `BatchOptions.maxChecks`). Not used on a Cluster, where each
   * chain goes to its own slot's node (see docs/redis.md).
   */
  readonly batch?: false | BatchOptions | undefined;
}

/** Batching settings of `redisStore({ batch })`. */
export interface BatchOptions {
  /**
   * Most checks in one script call; a full batch is sent at once, so that
   * with many checks in flight several batches overlap (Redis works on one
   * while the client prepares the next). Default 16 with ioredis, which
   * writes each command at once. Default 64 with node-redis, which writes
   * the commands of one tick together (on `setImmediate`), so batches of one
   * tick cannot overlap and fewer, larger ones cost less. At most 1024.
   */
  readonly maxChecks?: number | undefined;
}


/** Every option `redisStore()` takes (an unknown one is refused, naming it). */
export const REDIS_STORE_OPTIONS: readonly string[] = [
  'client', 'prefix', 'timeMode', 'clock', 'ttlGraceMs', 'keySecret', 'cluster', 'deadlineMs', 'maxInFlight', 'startupWaitMs', 'breaker', 'batch',
  'deadConnectionMs', 'onDeadConnection',
];

/** Checks per script call for `batch` (1 when batching is off). */
export function batchSize(batch: false | BatchOptions | undefined, byDefault: number): number {
  if (batch === false) return 1;
  if (batch !== undefined && (batch === null || typeof batch !== 'object')) {
    throw new ConfigError('RC_INVALID_OPTION', 'redisStore.batch', `must be false or { maxChecks }, got ${String(batch)}`);
  }
  const max = batch?.maxChecks ?? byDefault;
  if (!Number.isSafeInteger(max) || max < 1 || max > 1024) {
    throw new ConfigError('RC_INVALID_OPTION', 'redisStore.batch.maxChecks', `must be an integer from 1 to 1024, got ${String(max)}`);
  }
  return max;
}

