import { channel, type Channel } from 'node:diagnostics_channel';
import type { ShadowReport } from './shadow-report.js';
import type { Decision, OnError } from './types.js';

/**
 * Channel names on `node:diagnostics_channel`. Publishing costs nothing when
 * nobody subscribes. Each channel has one payload type, below, the same at
 * every publish site (docs/events.md; test/core/events.test.ts holds each
 * published payload against its declared fields).
 */
export const CHANNELS = {
  /** Every decision: `DecisionEvent`. */
  decision: 'ratecontract:decision',
  /** A store could not answer (reason: error, timeout, breaker-open, busy): `StoreErrorEvent`. */
  storeError: 'ratecontract:store-error',
  /** A limit was decided by its fail mode: `FallbackEvent`. */
  fallback: 'ratecontract:fallback',
  /** A `closed` limit rejected for lack of a store: `FailClosedEvent`. */
  failClosed: 'ratecontract:fail-closed',
  /** A key extractor threw: `KeyErrorEvent`. The request is counted under a shared key. */
  keyError: 'ratecontract:key-error',
  /** A cost function threw or returned an invalid cost (the request then costs the limit's capacity + 1): `CostErrorEvent`. */
  costError: 'ratecontract:cost-error',
  /** An `allow` or `deny` list function threw (counted as no match): `ListErrorEvent`. */
  listError: 'ratecontract:list-error',
  /** A store call missed its deadline: `TimeoutEvent`. Also reported on store-error. */
  timeout: 'ratecontract:timeout',
  /** A store's circuit breaker changed state: `BreakerEvent`. */
  breaker: 'ratecontract:breaker',
  /** The replica count used by degraded limits changed: `ReplicasEvent`. */
  replicas: 'ratecontract:replicas',
  /** A store call that was made finished (answered, failed or missed its deadline): `StoreCallEvent`. */
  storeCall: 'ratecontract:store-call',
  /** `limiter.reset` cleared a key's state: `ResetEvent`. */
  reset: 'ratecontract:reset',
  /** A check named a plan the limit does not define (decided by the limit's fail mode): `PlanErrorEvent`. */
  planError: 'ratecontract:plan-error',
  /** A store's connection looked silently dead (calls outstanding, no reply for `deadConnectionMs`): `DeadConnectionEvent`. */
  deadConnection: 'ratecontract:dead-connection',
  /**
   * A shadowed limit's report (`ShadowReport`: time in shadow, would-reject
   * rate, top keys, top-10 share), each time its sliding period moves on by a
   * bucket: published at the first check of the new bucket.
   */
  shadow: 'ratecontract:shadow',
} as const;

/** `ratecontract:decision`: every decision, with the limiter's clock at the check. */
export interface DecisionEvent {
  readonly decision: Decision;
  readonly now: number;
}

/** Why a store could not answer. */
export type StoreFailureReason = 'error' | 'timeout' | 'breaker-open' | 'busy';

/** `ratecontract:store-error`: a store could not answer a call. */
export interface StoreErrorEvent {
  /** The store's name in the limiter (`'(default)'` for the default store); a store's own internal call (a Cluster compensation) reports its kind. */
  readonly store: string;
  /** The store's kind, e.g. `'redis'`, `'memory'`. */
  readonly kind: string;
  readonly reason: StoreFailureReason;
  /** What the call threw (for `breaker-open` and `busy`, the limiter's own error). */
  readonly error: unknown;
  /** Names of the limits the failed call was for (empty for a heartbeat). */
  readonly limits: readonly string[];
}

/** `ratecontract:timeout`: a store call missed its deadline (also on store-error with reason `timeout`). */
export interface TimeoutEvent {
  readonly store: string;
  readonly deadlineMs: number;
  readonly limits: readonly string[];
}

/** `ratecontract:breaker`: a store's breaker moved, with its window at that moment. */
export interface BreakerEvent {
  readonly store: string;
  readonly kind: string;
  readonly from: 'closed' | 'open' | 'half-open';
  readonly to: 'closed' | 'open' | 'half-open';
  readonly now: number;
  readonly failureRate: number;
  readonly calls: number;
  /**
   * The failure domain whose breaker moved (a Redis Cluster's master,
   * `'host:port'`), for a store with per-node breakers; undefined for the
   * store's own breaker.
   */
  readonly node: string | undefined;
}

/** `ratecontract:fallback`: a limit was decided by its fail mode. */
export interface FallbackEvent {
  readonly limitName: string;
  readonly onError: OnError;
  readonly store: string;
}

/** `ratecontract:fail-closed`: a `closed` limit rejected with 503 for lack of a store. */
export interface FailClosedEvent {
  readonly limitName: string;
  readonly store: string;
}

/** `ratecontract:key-error`: a key function threw. */
export interface KeyErrorEvent {
  readonly limitName: string;
  readonly error: unknown;
}

/** `ratecontract:cost-error`: a limit's cost function threw or returned something other than a positive integer. */
export interface CostErrorEvent {
  readonly limitName: string;
  /** What it threw, or a `TypeError` naming what it returned. */
  readonly error: unknown;
  /** The cost used instead: the limit's capacity + 1 (rejected, never fits). */
  readonly cost: number;
}

/** `ratecontract:list-error`: a function entry of an allow or deny list threw; it counted as no match. */
export interface ListErrorEvent {
  readonly list: 'allow' | 'deny';
  /** The name of the limit whose list it is; `undefined` for the limiter's own lists. */
  readonly limitName: string | undefined;
  readonly error: unknown;
}

/** `ratecontract:replicas`: the replica count k changed. */
export interface ReplicasEvent {
  readonly replicas: number;
  readonly source: 'heartbeat';
}

/** `ratecontract:store-call`: a store call that was made finished (published only while someone listens). */
export interface StoreCallEvent {
  readonly store: string;
  readonly kind: string;
  /** From the call's start (after the readiness wait) to its answer, failure or missed deadline. */
  readonly durationMs: number;
  /** Whether it answered within its deadline. */
  readonly ok: boolean;
}

/** `ratecontract:reset`: `limiter.reset` cleared one key's state of one limit (the audit trail). */
export interface ResetEvent {
  readonly limitName: string;
  /** `'#' + base64url(SHA-256)` of the raw key: never the key itself. */
  readonly keyHash: string;
  /** Who asked, when the caller said so (`reset(name, ctx, { by })`). */
  readonly by: string | undefined;
  /** The store's name in the limiter (`'(default)'` for the default store). */
  readonly store: string;
}

/** `ratecontract:plan-error`: the plan a check named is not in the limit's plan table (or its plan function threw). */
export interface PlanErrorEvent {
  readonly limitName: string;
  /** The plan name the context gave (`undefined` when there was none, or the plan function threw). */
  readonly plan: string | undefined;
  readonly error: unknown;
}

/** `ratecontract:dead-connection`: calls to a store have been outstanding for its `deadConnectionMs` with not one reply. */
export interface DeadConnectionEvent {
  /** The store's name in the limiter (`'(default)'` for the default store). */
  readonly store: string;
  readonly kind: string;
  /** How long not one call had settled, ms on the limiter's clock. */
  readonly silentMs: number;
  /** Calls made and not settled at that moment, their deadline passed or not. */
  readonly outstanding: number;
  /** Whether the store replaced its connection (`store.reconnect()` returned true). */
  readonly reconnected: boolean;
  /**
   * The failure domain whose calls fell silent (a Redis Cluster master,
   * `'host:port'`) when the store has per-node breakers; undefined for the
   * store as a whole.
   */
  readonly node: string | undefined;
}

/** A diagnostics channel that only takes its own payload type. */
export class TypedChannel<T extends object> {
  readonly #channel: Channel;
  constructor(readonly name: string) {
    this.#channel = channel(name);
  }
  get hasSubscribers(): boolean {
    return this.#channel.hasSubscribers;
  }
  publish(payload: T): void {
    this.#channel.publish(payload);
  }
}

export const decisionChannel = new TypedChannel<DecisionEvent>(CHANNELS.decision);
export const storeErrorChannel = new TypedChannel<StoreErrorEvent>(CHANNELS.storeError);
export const fallbackChannel = new TypedChannel<FallbackEvent>(CHANNELS.fallback);
export const failClosedChannel = new TypedChannel<FailClosedEvent>(CHANNELS.failClosed);
export const keyErrorChannel = new TypedChannel<KeyErrorEvent>(CHANNELS.keyError);
export const costErrorChannel = new TypedChannel<CostErrorEvent>(CHANNELS.costError);
export const listErrorChannel = new TypedChannel<ListErrorEvent>(CHANNELS.listError);
export const timeoutChannel = new TypedChannel<TimeoutEvent>(CHANNELS.timeout);
export const breakerChannel = new TypedChannel<BreakerEvent>(CHANNELS.breaker);
export const replicasChannel = new TypedChannel<ReplicasEvent>(CHANNELS.replicas);
export const storeCallChannel = new TypedChannel<StoreCallEvent>(CHANNELS.storeCall);
export const resetChannel = new TypedChannel<ResetEvent>(CHANNELS.reset);
export const planErrorChannel = new TypedChannel<PlanErrorEvent>(CHANNELS.planError);
export const deadConnectionChannel = new TypedChannel<DeadConnectionEvent>(CHANNELS.deadConnection);
export const shadowChannel = new TypedChannel<ShadowReport>(CHANNELS.shadow);

/** Every channel's payload fields, for tests and tools that check payloads at run time. */
export const EVENT_FIELDS: { readonly [K in keyof typeof CHANNELS]: readonly string[] } = {
  decision: ['decision', 'now'],
  storeError: ['store', 'kind', 'reason', 'error', 'limits'],
  fallback: ['limitName', 'onError', 'store'],
  failClosed: ['limitName', 'store'],
  keyError: ['limitName', 'error'],
  costError: ['limitName', 'error', 'cost'],
  listError: ['list', 'limitName', 'error'],
  timeout: ['store', 'deadlineMs', 'limits'],
  breaker: ['store', 'kind', 'from', 'to', 'now', 'failureRate', 'calls', 'node'],
  replicas: ['replicas', 'source'],
  storeCall: ['store', 'kind', 'durationMs', 'ok'],
  reset: ['limitName', 'keyHash', 'by', 'store'],
  planError: ['limitName', 'plan', 'error'],
  deadConnection: ['store', 'kind', 'silentMs', 'outstanding', 'reconnected', 'node'],
  shadow: ['limitName', 'keySpec', 'now', 'inShadowMs', 'periodMs', 'checks', 'wouldReject', 'wouldRejectRate', 'top10Share', 'top', 'sketch'],
};
