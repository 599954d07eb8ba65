import type { AccessEntry, LimiterLists } from './access-list.js';
import type { Clock } from './clock.js';
import { CheckDecision } from './decision.js';
import type { ShadowReport, ShadowReportOptions } from './shadow-report.js';
import type { StoreHealth } from './store-circuit.js';
import type { Store, SyncStore } from './store.js';
import type { CheckOptions, CompiledLimit, Decision, LimitDefinition, RequestContext } from './types.js';

/** Options of `createLimiter`. `Ctx` is the request context your key functions and `check()` take. */
export interface LimiterOptions<Ctx = RequestContext> {
  /** The chain, most specific first (recipient, account, tenant, IP, global). */
  readonly limits: readonly LimitDefinition<Ctx>[];
  /**
   * The store of every limit that names none (a limit's `store: '<name>'`
   * picks one of `stores` instead). Default: a new `memoryStore()`.
   */
  readonly defaultStore?: Store | undefined;
  /** Named stores (failure domains) that limits select with `store: '<name>'`. */
  readonly stores?: Readonly<Record<string, Store>> | undefined;
  /** Time source in ms. Default: the system clock. */
  readonly clock?: Clock | undefined;
  /**
   * k, the replica count, for `degraded` limits (local limit ceil(N/k)).
   * A number, or `'discover'`: each limiter keeps a heartbeat in the default
   * store (which must implement `heartbeat`) and reads the live count; during
   * an outage the last-known count is used (1 until the first heartbeat).
   * Default 1.
   */
  readonly replicas?: number | 'discover' | undefined;
  /** With `replicas: 'discover'`: heartbeat period in ms (an instance is counted for 3 periods). Default 5000. */
  readonly heartbeatMs?: number | undefined;
  /** `closed` limits past their grace period answer 503 with this Retry-After. Default 1000 ms. */
  readonly failClosedRetryAfterMs?: number | undefined;
  /**
   * Most keys the process-local fallback (the fail modes' local limiter)
   * holds; beyond it keys share conservative overflow slots, as in the
   * memory store. Default 100,000.
   */
  readonly fallbackMaxKeys?: number | undefined;
  /**
   * Requests that skip the whole chain (outcome `'allowed-list'`): addresses
   * or CIDRs matched against `ctx.ip`, `{ principal }`, or functions of the
   * context. Checked before any store call; `limiter.lists.allow` changes it
   * at run time. A deny list wins over every allow list.
   */
  readonly allow?: readonly AccessEntry<Ctx>[] | undefined;
  /** Requests refused with 403 (outcome `'denied'`) before any store call; `limiter.lists.deny` changes it at run time. */
  readonly deny?: readonly AccessEntry<Ctx>[] | undefined;
  /**
   * The live shadow report of the limits with `shadow: true` (a bounded
   * top-K of the keys each would have rejected over a sliding period;
   * `limiter.shadowReport()`, the `ratecontract:shadow` event;
   * docs/metrics.md, "Shadow report"). Default `{}`: one hour in 6 buckets
   * of 64 counters, anonymous keys hashed with a random per-limiter key.
   * `false`: no report (and no cost per check).
   */
  readonly shadowReport?: ShadowReportOptions | false | undefined;
}

/** The in-process stores a limiter needs and core does not build itself (the composition root supplies them). */
export interface LocalStores {
  /** The default store when `options.defaultStore` is omitted. */
  newStore(): Store;
  /** The fail modes' local store, holding at most `maxKeys` keys. */
  newFallbackStore(maxKeys: number): SyncStore;
}

export const OPTION_NAMES: readonly string[] = ['limits', 'defaultStore', 'stores', 'clock', 'replicas', 'heartbeatMs', 'failClosedRetryAfterMs', 'fallbackMaxKeys', 'allow', 'deny', 'shadowReport'];

/** A `CheckOptions` flag (internal to the HTTP layer): keep each limit's raw key in the decision (for partition keys). */
export const WANT_KEYS: unique symbol = Symbol('ratecontract.wantKeys');

/** `CheckOptions` with the HTTP layer's internal flag. */
export interface InternalCheckOptions extends CheckOptions {
  readonly [WANT_KEYS]?: boolean | undefined;
}

/** The raw key each limit used (`undefined`: no key, or the key function threw), if `check` was asked for them. */
export function decisionKeys(decision: Decision): ReadonlyArray<string | undefined> | undefined {
  return CheckDecision.keysOf(decision);
}

/** A limiter: checks requests (of context type `Ctx`) against a chain of limits. Never throws on a store failure. */
export interface Limiter<Ctx = RequestContext> {
  readonly limits: readonly CompiledLimit[];
  /** Decides one request. Rejects only on programmer error (an invalid `cost`). */
  check(ctx: Ctx, options?: CheckOptions): Promise<Decision>;
  /**
   * Decides one request at once when no store call can wait on I/O (every
   * limit on one in-process store, such as `memoryStore()`), with exactly
   * the decision, state change and events `check` would make; returns
   * `undefined`, deciding nothing, when the chain needs an asynchronous
   * store (call `check`). Throws `UsageError` on an invalid `cost`. For
   * adapters and hot loops that can skip a promise per request.
   */
  checkSync(ctx: Ctx, options?: CheckOptions): Decision | undefined;
  /**
   * The decision `check(ctx, options)` would make now, consuming nothing:
   * no state written, no TTL refreshed, no lease taken, no event on
   * `ratecontract:decision`. Per limit, the same `allowed`, `remaining`,
   * `resetMs` and `retryAfterMs` as a check at the same instant. Its
   * `release()` and `settle()` do nothing. An operator call: rejects with a
   * `StoreError` when a store cannot answer (no fail mode stands in), with
   * `UsageError` `RC_UNSUPPORTED_STORE` when a store has no `peek`, and
   * `RC_UNKNOWN_PLAN` when the request names no plan of a limit with plans.
   */
  peek(ctx: Ctx, options?: CheckOptions): Promise<Decision>;
  /**
   * Clears the state of `ctx`'s key under the limit named `limitName` (every
   * plan's state included), in its store and in the fail modes' local
   * store: the key then decides as if it had never been seen. Publishes
   * `ratecontract:reset` with the limit, the key's hash (never the key) and
   * `by` when given (who asked, for the audit trail). Rejects with
   * `UsageError` (`RC_UNKNOWN_LIMIT` naming the limit; `RC_INVALID_KEY` when
   * the context has no key for it) and with a `StoreError` when the store
   * cannot answer.
   */
  reset(limitName: string, ctx: Ctx, options?: { readonly by?: string | undefined }): Promise<void>;
  /** The allow and deny lists (the limiter's and each limit's), changeable at run time. */
  readonly lists: LimiterLists<Ctx>;
  /** The replica count k that `degraded` limits currently divide by. */
  readonly replicas: number;
  /** Circuit breaker state per store name (`'(default)'` for the default store). */
  breakerStates(): Record<string, 'closed' | 'open' | 'half-open'>;
  /**
   * Per store name: breaker state, failure rate and calls in its window,
   * calls in flight, and whether the store is ready. What an operator needs
   * to see that the limiter is deciding locally.
   */
  storeHealth(): Record<string, StoreHealth>;
  /**
   * Per limit with `shadow: true`, in chain order: how long it has been in
   * shadow, its checks and would-be rejections over the sliding period, and
   * the top 10 keys it would have rejected (principals by name, other keys
   * by keyed hash). Empty without shadowed limits or with
   * `shadowReport: false`.
   */
  shadowReport(): ShadowReport[];
  /**
   * Stops background work (the discovery heartbeat, the two-tier allotment
   * sweep) and gives unspent two-tier allotments back to their stores. Resolves
   * once every allotment is back in its shared store (or its store failed: those
   * units then expire with the state); never rejects. Await it before you
   * close the store's client. Safe to call more than once. The limiter keeps
   * working with the last-known replica count; an allotment drawn after close()
   * goes back at once.
   */
  close(): Promise<void>;
}

