import type { Figures } from '../algorithms/types.js';
import type { CompiledLimit } from './types.js';

/** Circuit breaker settings of one store. */
export interface BreakerOptions {
  /**
   * Failure rate (errors and missed deadlines over calls, 0 < rate <= 1) in
   * the last `windowMs` that opens the breaker, once the window holds at
   * least `minimumCalls` calls. Default 0.5.
   */
  readonly failureRate?: number | undefined;
  /** Calls the window must hold before the failure rate counts. Default 20. */
  readonly minimumCalls?: number | undefined;
  /** Length of the rolling window the failure rate is measured over, ms. Default 1000. */
  readonly windowMs?: number | undefined;
  /**
   * Consecutive failures that open the breaker while the window holds fewer
   * than `minimumCalls` calls (light traffic, where a rate means little).
   * Default 3.
   */
  readonly failureThreshold?: number | undefined;
  /**
   * How long an open breaker skips the store before it lets a probe through,
   * ms. Each failed probe doubles it, up to `maxCooldownMs`; closing resets
   * it. Default 200.
   */
  readonly cooldownMs?: number | undefined;
  /**
   * Longest cool-down after repeated failed probes, ms: while the store
   * stays down the breaker probes about this often, so the store decides
   * again at most this long (plus the probes' round trips) after it
   * recovers. Default 500 (at most 2 probes a second per store once it has
   * grown; each probe is one check's store call, run as the check).
   */
  readonly maxCooldownMs?: number | undefined;
  /**
   * Consecutive successful probes (one at a time, each within the deadline)
   * that close a half-open breaker. Default 3.
   */
  readonly probeSuccesses?: number | undefined;
}

/** One limit's part of a chain, as a store sees it. */
export interface StoreOp {
  /** The compiled limit this op meters (its algorithm, figures and fail mode). */
  readonly spec: CompiledLimit;
  /** The bounded key (long keys are already hashed). */
  readonly key: string;
  /** Cost, an integer >= 0. */
  readonly cost: number;
  /** Lease id (concurrency only). */
  readonly leaseId: string | undefined;
  /**
   * Refunds only: the store-clock instant the cost being given back was
   * consumed at (a `StoreOpResult.decidedAt`), so that it goes back into the
   * window it was counted in. Absent: the store's own record, or `now`.
   */
  readonly decidedAt?: number | undefined;
}

/** A store's answer for one op. */
export interface StoreOpResult {
  readonly allowed: boolean;
  /** Whether the op's cost was taken from the store. */
  readonly consumed: boolean;
  readonly remaining: number;
  readonly resetMs: number;
  readonly retryAfterMs: number;
  readonly delayMs: number;
  /**
   * The store's clock at the decision (Redis: server time), when it
   * decides at a clock of its own. Optional; absent means the `now` the
   * limiter passed. The two-tier modes (`tier`) bound the clocks' offset
   * with it.
   */
  readonly decidedAt?: number | undefined;
}

/**
 * The store contract. A store decides a whole chain atomically: every op is
 * decided against the same instant; if any enforcing (non-shadow) op is
 * rejected, no op consumes unless its limit has `countRejected`. Stores must
 * pass the conformance suite (`ratecontract/testing`, see docs/stores.md).
 */
export interface Store {
  /** Short description for events and errors, e.g. `'memory'`, `'redis'`. */
  readonly kind: string;
  /**
   * Decides `ops` as one atomic chain. `now` is the limiter's clock; a store
   * that uses its own clock (Redis server time) may ignore it. Must reject
   * (not resolve) on a store failure.
   */
  evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]>;
  /** Gives back what `ops` consumed at `now` (compensation when another store rejected the request). */
  refund(ops: readonly StoreOp[], now: number): Promise<void>;
  /** Frees a concurrency lease. */
  release(op: StoreOp, now: number): Promise<void>;
  /**
   * What `evaluate(ops, now)` would answer now, changing nothing: no state
   * written, no TTL refreshed, no lease taken (`consumed` then says whether
   * `evaluate` would have consumed). Optional; `limiter.peek` needs it and
   * rejects with `RC_UNSUPPORTED_STORE` naming the store without it. Must
   * reject on a store failure.
   */
  peek?(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]>;
  /**
   * Forgets the state of each op's key under its limit (`limiter.reset`):
   * afterwards the key decides as if it had never been seen. Optional;
   * `limiter.reset` rejects with `RC_UNSUPPORTED_STORE` without it.
   */
  clear?(ops: readonly StoreOp[], now: number): Promise<void>;
  /** Deadline of one call in ms, enforced by the limiter for asynchronous stores. Default 20. */
  readonly deadlineMs?: number | undefined;
  /**
   * Most calls in flight at once; a check beyond it is decided by its fail
   * mode at once instead of queuing behind the others. Default 1000.
   */
  readonly maxInFlight?: number | undefined;
  /**
   * Resolves once the store can decide (for Redis: the client is connected
   * and the scripts are loaded). The limiter calls it when it is created;
   * checks made before it resolves wait for it, up to `startupWaitMs`,
   * before their deadline starts. Optional: a store without it is ready at
   * once.
   */
  ready?(): Promise<void>;
  /** How long checks wait for `ready()` after the limiter is created, ms. Default 1000. */
  readonly startupWaitMs?: number | undefined;
  /** Circuit breaker settings for this store (failure domain). */
  readonly breaker?: BreakerOptions | undefined;
  /**
   * When the limiter takes the store's connection for silently dead, ms on
   * the limiter's clock: calls have been outstanding this long (made, their
   * deadline passed or not) and not one of them has settled, in time or
   * late, with an answer or an error. It then calls `reconnect()` (when the
   * store has it) and publishes `ratecontract:dead-connection`, at most once
   * per this period while the silence lasts. A slow store is not silent: its
   * late answers settle calls. `false`: never. Default 2000.
   */
  readonly deadConnectionMs?: number | false | undefined;
  /**
   * Replaces the store's connection, which the limiter found silently dead
   * (see `deadConnectionMs`); with `node` (one of the names `domains`
   * returns), only that failure domain's connection, whose calls fell silent
   * while the others answered. Returns whether it did (`false`: nothing
   * done, for example because the client is not connected anyway). Must not
   * throw. Optional.
   */
  reconnect?(node?: string): boolean;
  /**
   * The failure domains a call for `ops` goes to: for a Redis Cluster, the
   * master node (`'host:port'`) of each op's slot. With it the limiter keeps
   * a breaker per domain, so one unreachable node sends to their fail mode
   * only the checks that need it. Undefined (or empty): the store is one
   * failure domain. Optional; must be cheap and must not throw.
   */
  readonly domains?: ((ops: readonly StoreOp[]) => readonly string[] | undefined) | undefined;
  /**
   * After a call for `ops` failed, the domains among `domains(ops)` that did
   * answer (their part of the call succeeded): the failure is not counted
   * against them. Optional; without it, every domain the call touched counts
   * the failure.
   */
  readonly answered?: ((ops: readonly StoreOp[]) => readonly string[]) | undefined;
  /**
   * `keySlots`: maps a (bounded) key to the key of its slot among `slots`,
   * with this store's keyed hash, so every process that shares the store
   * puts a key in the same slot. Optional; without it the limiter uses an
   * unkeyed SHA-256 (`slotKey` in core/request-key.ts).
   */
  slotKey?(key: string, slots: number): string;
  /**
   * Replica discovery: records that limiter `instanceId` is alive for
   * `ttlMs` and resolves with the number of live instances. Optional; needed
   * for `createLimiter({ replicas: 'discover' })`.
   */
  heartbeat?(instanceId: string, ttlMs: number, now: number): Promise<number>;
  /**
   * Whether this store can hold `limit`: `undefined` if it can, else the
   * reason it cannot. Optional (a store without it holds every limit). The
   * limiter asks at construction for each limit given to the store and
   * refuses to build (a `ConfigError`, `RC_UNSUPPORTED_STORE`) with the
   * reason, so a limit a store cannot enforce fails at startup, never at a
   * request (the PostgreSQL quota store refuses windows under an hour).
   */
  accepts?(limit: CompiledLimit): string | undefined;
}

/** A store that can also decide synchronously (in-process stores). The limiter uses it to skip a promise per check. */
export interface SyncStore extends Store {
  evaluateSync(ops: readonly StoreOp[], now: number): readonly StoreOpResult[];
}

/**
 * A synchronous store that can decide a chain of exactly one op without
 * building it: writes the algorithm's figures into `out` (alone in its
 * chain, an op that admits is consumed when its cost is above 0). The
 * limiter's single-limit path uses it; its decisions are the same as
 * `evaluateSync` with one op (the memory store's conformance suite holds
 * both to that).
 */
export interface SingleOpStore extends SyncStore {
  decideOne(limit: CompiledLimit, key: string, cost: number, now: number, out: Figures): void;
}

/** Whether `store` decides single ops without building a chain. */
export function isSingleOpStore(store: Store): store is SingleOpStore {
  return isSyncStore(store) && typeof (store as Partial<SingleOpStore>).decideOne === 'function';
}

/** Whether `store` offers synchronous evaluation. */
export function isSyncStore(store: Store): store is SyncStore {
  return typeof (store as Partial<SyncStore>).evaluateSync === 'function';
}
