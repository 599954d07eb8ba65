import type { AlgorithmName, AlgorithmParams } from '../algorithms/types.js';
import type { AccessEntry, AccessList } from './access-list.js';
import type { Duration } from './duration.js';

/** Why a limit exists. `abuse`: make an attack uneconomical (a security control). `shedding`: protect capacity. */
export type Purpose = 'abuse' | 'shedding';

/**
 * What a limit does when its store cannot answer (error, timeout, open breaker):
 * - `open`: admit (outcome `fail-open`). On an `abuse` limit only with `acknowledgeFailOpen`.
 * - `degraded`: decide on a process-local limiter with limit ceil(N/k), k = the replica count. Never rejects for lack of a store.
 * - `closed`: decide on a process-local limiter with limit N; after `failClosedAfter` of continuous store failure, reject with 503.
 */
export type OnError = 'open' | 'degraded' | 'closed';

/**
 * The request as the built-in key specs see it (`'ip'`, `'principal'`,
 * `'header.x'`, `'query.x'`, `'body.x'`). Adapters build it. Your own
 * context type, with fields of your own, goes in `createLimiter<Ctx>()`:
 * key and cost functions and `check()` then take `Ctx`, and the built-in
 * specs read these fields of it when it has them.
 */
export interface RequestContext {
  /** Client address, already resolved through trusted proxies by the adapter. */
  readonly ip?: string | undefined;
  /** The authenticated identity supplied by the application, if any. */
  readonly principal?: string | undefined;
  readonly method?: string | undefined;
  readonly path?: string | undefined;
  /** Lower-case header names. */
  readonly headers?: Readonly<Record<string, string | readonly string[] | undefined>> | undefined;
  readonly query?: Readonly<Record<string, string | readonly string[] | undefined>> | undefined;
  /** Parsed (bounded) JSON body. */
  readonly body?: unknown;
}

/** Returns the key for a request, or `undefined` when the limit does not apply to it. Runs once per check. */
export type KeyFunction<Ctx = RequestContext> = (ctx: Ctx) => string | number | undefined;

/** A limit's cost for one request, from its context. Method-typed, as key functions are accepted for any `Ctx`. */
export type CostFunction<Ctx = RequestContext> = { cost(ctx: Ctx): number }['cost'];

/** The built-in key extractors, which read `RequestContext` fields. */
export type BuiltinKey = 'ip' | 'principal' | 'global' | `header.${string}` | `query.${string}` | `body.${string}`;

/**
 * Built-in key extractors: `'ip'`, `'principal'`, `'global'`, `'header.<name>'`,
 * `'query.<name>'`, `'body.<field>'` (dot paths allowed: `'body.user.phone'`).
 */
export type KeySpec<Ctx = RequestContext> = BuiltinKey | KeyFunction<Ctx>;

/** One limit: every clause of the contract in one place. `Ctx` is the context type its key function reads. */
export interface LimitDefinition<Ctx = RequestContext> {
  /** Unique name, `[a-z0-9_-]+`, at most 64 characters. Appears in headers, metrics and events. */
  readonly name: string;
  /** Required, no default: `'abuse'` (security control) or `'shedding'` (capacity). */
  readonly purpose: Purpose;
  /** Fail mode. Default: `'closed'` for abuse, `'degraded'` for shedding. */
  readonly onError?: OnError | undefined;
  /**
   * Required to set `onError: 'open'` on an `abuse` limit: a sentence saying
   * why failing open is acceptable here. `audit` prints it.
   */
  readonly acknowledgeFailOpen?: string | undefined;
  /** The algorithm; default `'gcra'`. */
  readonly algorithm?: AlgorithmName | undefined;
  /** N: cost admitted per `window` (concurrency: cost in flight). Positive integer. */
  readonly limit: number;
  /** W: `'15m'`, `'60s'`, `'500ms'`, or integer ms. For `concurrency`, the lease lifetime. */
  readonly window: Duration;
  /** B, for token-bucket, leaky-bucket and gcra: the largest burst. Default `limit`. */
  readonly burst?: number | undefined;
  /**
   * sliding-window only: sub-windows per window, an integer from 1 to 60
   * that divides the window in ms. Default 1: Cloudflare's two-counter
   * estimate. With k, only the oldest W/k of the trailing window is
   * estimated; the rest is counted exactly: at most N in any
   * `W - W/k + 1` ms, at most 2N - 1 in any W, and (k + 2) x 8 bytes of
   * state per key. docs/algorithms.md, "Sliding window precision", has
   * the measured error per precision.
   */
  readonly precision?: number | undefined;
  /** leaky-bucket only: `'meter'` (default) rejects at once; `'queue'` admits with a delay. */
  readonly mode?: 'meter' | 'queue' | undefined;
  /** The key extractor. Default `'ip'`. */
  readonly key?: KeySpec<Ctx> | undefined;
  /**
   * Cost of one request: a positive integer (default 1), or a synchronous
   * function of the context (a GraphQL query's complexity, an upload's
   * bytes). A function that throws or returns anything but a positive
   * integer costs `burst + 1` (the limit's capacity + 1: rejected, 413 over
   * HTTP) and is reported on `ratecontract:cost-error`. `check(ctx, { cost })`
   * overrides either.
   */
  readonly cost?: number | CostFunction<Ctx> | undefined;
  /**
   * The cost is the request's declared `Content-Length` in bytes (at least
   * 1), read from `ctx.headers`; advertised as `qu="content-bytes"`. A
   * request with neither `Content-Length` nor `Transfer-Encoding` has no body
   * (RFC 9112 section 6.3) and costs 1. A body of unknown length (chunked),
   * an invalid `Content-Length`, or a context without `headers` is handled
   * like a throwing cost function. Not with `cost`.
   */
  readonly costFromContentLength?: boolean | undefined;
  /** What the number defends. Strongly recommended; `audit` flags limits without one. */
  readonly reason?: string | undefined;
  /** Decide and report (`shadow-rejected`), never enforce. Default false. */
  readonly shadow?: boolean | undefined;
  /** Name of the store (failure domain) in `createLimiter({ stores })`; default store if omitted. */
  readonly store?: string | undefined;
  /**
   * By default a request rejected by any limit consumes nothing from any
   * limit. `true`: this limit consumes whenever it itself admits, even if
   * another limit rejects the request (counts attempts, not admissions).
   */
  readonly countRejected?: boolean | undefined;
  /**
   * What the limit counts: `'all'` (default) every admitted request;
   * `'failures'` only those settled as failures. The attempt is counted
   * when it is admitted and given back by `decision.settle('success')`, so
   * at most N are ever in flight or counted.
   */
  readonly count?: 'all' | 'failures' | undefined;
  /**
   * `count: 'failures'` over HTTP: which response statuses are failures. A
   * list (`[401, 403]`) or a predicate; default: status >= 400. An aborted
   * request is always a failure.
   */
  readonly failureStatus?: readonly number[] | ((status: number) => boolean) | undefined;
  /** HTTP status when this limit rejects. Default 503 for `key: 'global'`, else 429. */
  readonly status?: 429 | 503 | undefined;
  /** `closed` only: continuous store failure after which the limit rejects with 503. Default `'30s'`; 0 means at once. */
  readonly failClosedAfter?: Duration | undefined;
  /**
   * Bounded keyspace: the number of state slots this limit may hold in its
   * store (a positive integer up to 2^32). Each key is mapped by a keyed
   * hash (the Redis store's `keySecret`; a per-process secret in the memory
   * store) to one of `keySlots` slots, so invented keys (recipients,
   * accounts) cannot grow the store beyond `keySlots` entries for this
   * limit. Keys that share a slot share one budget: a collision only ever
   * makes the limit stricter for them, never looser. `audit` prints the
   * memory bound and the expected collision rate. Default: no bound (one
   * entry per key).
   */
  readonly keySlots?: number | undefined;
  /** Requests this limit lets through unmetered (addresses/CIDRs, `{ principal }`, functions); `limiter.lists.of(name).allow` changes it at run time. */
  readonly allow?: readonly AccessEntry<Ctx>[] | undefined;
  /** Requests this limit refuses with 403 before any store call; `limiter.lists.of(name).deny` changes it at run time. */
  readonly deny?: readonly AccessEntry<Ctx>[] | undefined;
  /**
   * Two-tier decisions for fleets whose shared store is the bottleneck
   * (docs/limits.md, "Two-tier limits"). `{ mode: 'allotment' }`: each process
   * takes allotments of quota from the store and decides locally until an
   * allotment is spent or expires; never admits more than the shared limit,
   * may admit less by the unspent allotments. `{ mode: 'pre-filter' }`: a process-local
   * copy of the limit at N refuses a single-source flood before it costs a
   * store call; never refuses what the shared limit would admit. Only
   * fixed-window, sliding-window, token-bucket and gcra.
   */
  readonly tier?: TierDefinition | undefined;
  /**
   * Plans: limits that depend on the key. Each plan (named `[a-z0-9_-]{1,64}`)
   * may set `limit`, `window` and `burst`; what it leaves out comes from
   * this definition (a plan that sets `limit` but not `burst` gets a burst
   * of its own limit). Each plan is checked at construction like a limit
   * (errors name `limits[i].plans.<plan>.<option>`). Needs `plan`. A plan
   * change takes effect at the key's next check; what state carries over
   * is in docs/limits.md, "Plans".
   */
  readonly plans?: Readonly<Record<string, PlanDefinition>> | undefined;
  /**
   * The plan of a request: a key spec (`'header.x-plan'`, `'principal'`,
   * `'body.tenant.plan'`) or a synchronous function of the context. A plan
   * name that `plans` does not define, none at all, or a throwing function
   * is reported on `ratecontract:plan-error` and the limit is decided by its
   * fail mode (`onError`) with this definition's own figures; never a throw.
   */
  readonly plan?: KeySpec<Ctx> | undefined;
}

/** One plan of a limit's `plans` table: what it changes. */
export interface PlanDefinition {
  /** N for this plan. Default: the limit's. */
  readonly limit?: number | undefined;
  /** W for this plan. Default: the limit's. */
  readonly window?: Duration | undefined;
  /** B for this plan (bucket algorithms). Default: the plan's own `limit` if it sets one, else the limit's burst. */
  readonly burst?: number | undefined;
}

/** The `tier` option of a limit: allotments of quota, or a local pre-filter. */
export type TierDefinition = AllotmentTierDefinition | PreFilterTierDefinition;

/**
 * `tier: { mode: 'allotment' }`: decide locally on allotments of quota taken
 * from the shared store ("lease" names concurrency leases only).
 */
export interface AllotmentTierDefinition {
  readonly mode: 'allotment';
  /**
   * The largest allotment one process takes for one key, in cost units.
   * Allotments shrink from it toward the request's cost as the shared
   * remaining falls (remaining / 2k), so checks near the limit are exact
   * shared checks. Default: capacity / (8k), at least 1 (k = the limiter's
   * `replicas`). token-bucket and gcra need k x maxAllotment below the
   * burst: the shared bucket holds burst - k x maxAllotment, the rest is
   * what allotments may hold.
   */
  readonly maxAllotment?: number | undefined;
  /**
   * Longest time an allotment is spent from, after which its unspent units
   * go back to the store. Default a tenth of the window. fixed-window and
   * sliding-window allotments also end with the aligned window they were taken in.
   */
  readonly allotmentLifetime?: Duration | undefined;
  /** Most keys holding an allotment in one process; the oldest allotment is given back beyond it. Default 10,000. */
  readonly maxKeys?: number | undefined;
}

/** `tier: { mode: 'pre-filter' }`: a process-local copy of the limit at N in front of the shared store. */
export interface PreFilterTierDefinition {
  readonly mode: 'pre-filter';
  /** Most keys the local copy tracks; the oldest is forgotten beyond it (which only makes it refuse less). Default 10,000. */
  readonly maxKeys?: number | undefined;
}

/** A validated `tier`. */
export type CompiledTier =
  | { readonly mode: 'allotment'; readonly maxAllotment: number | undefined; readonly allotmentLifetimeMs: number; readonly maxKeys: number }
  | { readonly mode: 'pre-filter'; readonly maxKeys: number };

/** A validated, normalised limit. */
export interface CompiledLimit {
  readonly name: string;
  readonly purpose: Purpose;
  readonly onError: OnError;
  readonly algorithm: AlgorithmName;
  readonly params: AlgorithmParams;
  readonly keySpec: string;
  readonly key: (ctx: RequestContext) => string | undefined;
  readonly count: 'all' | 'failures';
  /** Whether a response status is a failure for this limit (`failureStatus`; default >= 400). */
  readonly isFailure: (status: number) => boolean;
  /** The static cost (1 when the cost comes from the request). */
  readonly cost: number;
  /** The cost from the request (a cost function or `costFromContentLength`); throws or returns an invalid cost on error. */
  readonly costOf: ((ctx: RequestContext) => number) | undefined;
  /** Where the cost comes from: `'static'`, `'function'` or `'content-length'`. */
  readonly costSpec: 'static' | 'function' | 'content-length';
  readonly reason: string | undefined;
  readonly acknowledgeFailOpen: string | undefined;
  readonly shadow: boolean;
  readonly storeName: string | undefined;
  readonly countRejected: boolean;
  readonly status: 429 | 503;
  readonly failClosedAfterMs: number;
  /** `keySlots`: the fixed slot space keys are hashed into, or `undefined` (one entry per key). */
  readonly keySlots: number | undefined;
  /** This limit's allow list (skips the limit). */
  readonly allow: AccessList;
  /** This limit's deny list (403 for the whole request). */
  readonly deny: AccessList;
  /** Identifies this limit's state in a store: name and algorithm, so a changed algorithm never reads old state. */
  readonly id: string;
  /** The compiled plans, by name (the same map on the limit and on each of its plans). */
  readonly plans?: ReadonlyMap<string, CompiledLimit> | undefined;
  /** The plan name of a request (`plan`); throws or returns `undefined` when there is none. */
  readonly planOf?: ((ctx: RequestContext) => string | undefined) | undefined;
  /** On a compiled plan: its name. */
  readonly plan?: string | undefined;
  /** On a limit with plans: the params of every plan whose state shares this `id` (a store keeps a state until none of them needs it). */
  readonly sharedParams?: readonly AlgorithmParams[] | undefined;
  /** Two-tier mode (`tier`), or `undefined` for plain shared checks. */
  readonly tier: CompiledTier | undefined;
}

/** Where a limit's verdict came from: the shared store, the process-local fallback, or nowhere (skipped or failed open). */
export type Source = 'store' | 'local' | 'none';

/** One limit's part in a decision. */
export interface LimitResult {
  readonly name: string;
  readonly allowed: boolean;
  /** Cost that still fits now. */
  readonly remaining: number;
  /** Ms until the full quota is back if nothing else arrives. */
  readonly resetMs: number;
  /** 0 if allowed; exact wait otherwise; `Infinity` if the cost can never fit. */
  readonly retryAfterMs: number;
  /** N. */
  readonly limit: number;
  readonly windowMs: number;
  readonly source: Source;
  readonly shadow: boolean;
  readonly purpose: Purpose;
  /** The limit's `onError`, set when it decided this result (the store failed); `undefined` otherwise. */
  readonly onError?: OnError | undefined;
  /** Set when an allow or deny list decided this limit (the limiter's own or the limit's): it was not metered. */
  readonly listed?: 'allow' | 'deny' | undefined;
}

/** The overall verdict. */
export type Outcome = 'allowed' | 'rejected' | 'shadow-rejected' | 'fail-open' | 'degraded' | 'fail-closed' | 'denied' | 'allowed-list';

/** The answer to `limiter.check()`. */
export interface Decision {
  readonly allowed: boolean;
  /** 200 when allowed; 429 or 503 when rejected; 403 when a deny list matched (outcome `'denied'`). */
  readonly status: 200 | 403 | 429 | 503;
  readonly outcome: Outcome;
  /** Name of the deciding limit when rejected (the first, most specific, rejecting limit; for `'denied'`, the limit whose deny list matched, `undefined` for the limiter's own). */
  readonly limitName: string | undefined;
  /** Earliest time (ms from now) at which the whole chain would admit the same request; 0 if allowed; `Infinity` if never. */
  readonly retryAfterMs: number;
  /** leaky-bucket queue mode: wait this long before proceeding. 0 otherwise. */
  readonly delayMs: number;
  /** One entry per limit, in chain order. */
  readonly results: readonly LimitResult[];
  /** Frees concurrency leases taken by this decision. Idempotent; a no-op when there are none. */
  release(): Promise<void>;
  /**
   * Says how the work went, for `count: 'failures'` limits: `'success'`
   * gives their attempt back (an atomic store refund), `'failure'` keeps it
   * counted; `{ status }` lets each limit classify an HTTP status by its
   * `failureStatus`. Only the first call counts; later ones do nothing.
   * Never rejects (a failed refund is reported on `ratecontract:store-error`
   * and the attempt stays counted: the strict side).
   */
  settle(outcome: 'success' | 'failure' | { readonly status: number }): Promise<void>;
}

/** Options of one check. */
export interface CheckOptions {
  /** Cost of this request, a positive integer. Default: each limit's `cost` (1). */
  readonly cost?: number | undefined;
}
