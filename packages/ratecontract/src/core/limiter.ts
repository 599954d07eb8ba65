import { randomBytes } from 'node:crypto';
import { AccessList, type LimiterLists, type ListCounter } from './access-list.js';
import { screenRequest, type Screen } from './access-screen.js';
import { figures } from '../algorithms/types.js';
import { KEY_ERROR, planOf, runCost, runKey, validCost, withPlanFailures } from './check-ops.js';
import { systemClock, type Clock } from './clock.js';
import { compileLimits } from './compile.js';
import { ConfigError, UsageError } from './errors.js';
import { refuseUnknown } from './options.js';
import { decisionChannel, resetChannel, storeErrorChannel, timeoutChannel } from './events.js';
import { startDiscovery } from './discovery.js';
import { ShadowWatch, type ShadowReport } from './shadow-report.js';
import { OPTION_NAMES, WANT_KEYS, type InternalCheckOptions, type Limiter, type LimiterOptions, type LocalStores } from './limiter-api.js';
import { LocalFallback } from './fallback.js';
import { operatorCall, resetOps, unknownPlan, unsupported } from './operator-calls.js';
import { failureReason, StoreTimeoutError, type StoreHealth } from './store-circuit.js';
import { fill, groupName, groupStores, present, type Group } from './store-groups.js';
import { keyHash, stateKeyOf } from './request-key.js';
import type { TierStore } from './tier-store.js';
import { CheckDecision, type HeldLease } from './decision.js';
import { isSingleOpStore, type SingleOpStore, type Store, type StoreOp, type StoreOpResult, type SyncStore } from './store.js';
import type { CheckOptions, CompiledLimit, Decision, LimitResult, OnError, Outcome, RequestContext } from './types.js';
import { nextTurn } from './timers.js';

export { decisionKeys, WANT_KEYS, type Limiter, type LimiterOptions, type LocalStores } from './limiter-api.js';

/** `createLimiter()`'s defaults (docs/limits.md holds its table to these). */
export const LIMITER_DEFAULTS = Object.freeze({ replicas: 1, heartbeatMs: 5000, failClosedRetryAfterMs: 1000 });

/** A one-limit chain's ops where none is needed (no key, or the fast path, which holds no leases). */
const NO_OPS: ReadonlyArray<StoreOp | undefined> = Object.freeze([undefined]);

/** A check's ops, its instant, and the ops of limits whose plan is unknown (decided by their fail mode, never sent to a store). */
interface Built {
  readonly ops: Array<StoreOp | undefined>;
  readonly now: number;
  readonly complete: boolean;
  readonly keys: Array<string | undefined> | undefined;
  readonly planFailed: Array<StoreOp | undefined> | undefined;
}

class ChainLimiter implements Limiter {
  readonly limits: readonly CompiledLimit[];
  readonly lists: LimiterLists;
  /** Entries across every list: 0 means no check screens anything. */
  readonly #listed: ListCounter = { entries: 0 };
  readonly #clock: Clock;
  readonly #shadow: ShadowWatch | undefined;
  readonly #groups: readonly Group[];
  readonly #single: Group | undefined;
  /** One limit on a store that decides single ops, not concurrency: decided without building a chain. */
  readonly #fast: { readonly limit: CompiledLimit; readonly store: SingleOpStore; readonly group: Group } | undefined;
  /** The fast path's scratch: one store result and the results array `#decide` reads (synchronous, so one each is enough). */
  readonly #scratch: { allowed: boolean; consumed: boolean; remaining: number; resetMs: number; retryAfterMs: number; delayMs: number } = {
    allowed: false, consumed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0,
  };
  readonly #scratchResults: Array<StoreOpResult | undefined> = [undefined];
  /** The fast path's scratch figures: filled by the store, copied into the decision at once. */
  readonly #figures = figures();
  readonly #fallback: LocalFallback;
  #heartbeat: NodeJS.Timeout | undefined;
  readonly #leasePrefix = randomBytes(6).toString('base64url') + ':';
  readonly #hasConcurrency: boolean;
  /** Per limit (by index): raw key -> the key its state lives under (bounded; its slot under `keySlots`). */
  readonly #stateKeys: ReadonlyArray<(raw: string) => string>;
  #leaseCounter = 0;
  readonly #tiers: readonly TierStore[];

  constructor(options: LimiterOptions, local: LocalStores) {
    if (options === null || typeof options !== 'object') throw new ConfigError('RC_INVALID_OPTION', 'options', 'createLimiter needs an options object');
    if ('store' in options) {
      // A limit's `store` names a store; the limiter's Store object is `defaultStore` (renamed before 0.1.0).
      throw new ConfigError('RC_INVALID_OPTION', 'store', 'unknown option "store"; did you mean "defaultStore"? (a Store object for the limits that name none; a limit\'s store: \'<name>\' picks one of `stores`)');
    }
    refuseUnknown(options, OPTION_NAMES, '');
    const stores = options.stores ?? {};
    this.limits = compileLimits(options.limits, new Set(Object.keys(stores)), this.#listed);
    const byName = new Map(this.limits.map((l) => [l.name, { allow: l.allow, deny: l.deny }]));
    this.lists = {
      allow: new AccessList('allow', undefined, this.#listed, options.allow, 'allow'),
      deny: new AccessList('deny', undefined, this.#listed, options.deny, 'deny'),
      of: (name: string) => {
        const l = byName.get(name);
        if (l === undefined) throw new UsageError('RC_UNKNOWN_LIMIT', `no limit named ${JSON.stringify(name)}; known limits: ${[...byName.keys()].join(', ')}`);
        return l;
      },
    };
    this.#clock = options.clock ?? systemClock;
    this.#shadow = ShadowWatch.for(this.limits, options.shadowReport, this.#clock.now());
    const replicas = options.replicas ?? LIMITER_DEFAULTS.replicas;
    if (replicas !== 'discover' && (!Number.isSafeInteger(replicas) || replicas < 1)) {
      throw new ConfigError('RC_INVALID_OPTION', 'replicas', `must be a positive integer or 'discover', got ${String(replicas)}`);
    }
    const k = replicas === 'discover' ? 1 : replicas;
    const failClosedRetryAfterMs = options.failClosedRetryAfterMs ?? LIMITER_DEFAULTS.failClosedRetryAfterMs;
    if (!Number.isSafeInteger(failClosedRetryAfterMs) || failClosedRetryAfterMs < 1) {
      throw new ConfigError('RC_INVALID_OPTION', 'failClosedRetryAfterMs', `must be a positive integer, got ${String(failClosedRetryAfterMs)}`);
    }
    const fallbackMaxKeys = options.fallbackMaxKeys ?? 100_000;
    if (!Number.isSafeInteger(fallbackMaxKeys) || fallbackMaxKeys < 1) {
      throw new ConfigError('RC_INVALID_OPTION', 'fallbackMaxKeys', `must be a positive integer, got ${String(fallbackMaxKeys)}`);
    }
    this.#fallback = new LocalFallback(local.newFallbackStore(fallbackMaxKeys), k, failClosedRetryAfterMs);
    const defaultStore = options.defaultStore ?? local.newStore();
    const { groups, tiers } = groupStores(this.limits, defaultStore, stores, this.#clock, replicas, () => this.#fallback.replicas);
    this.#tiers = tiers;
    this.#stateKeys = this.limits.map((l) => stateKeyOf(l, l.storeName === undefined ? defaultStore : (stores[l.storeName] as Store)));
    if (replicas === 'discover') {
      const fallback = this.#fallback;
      this.#heartbeat = startDiscovery(defaultStore, options.heartbeatMs ?? LIMITER_DEFAULTS.heartbeatMs, this.#clock, {
        get: () => fallback.replicas,
        set: (count) => (fallback.replicas = count),
      });
    }
    this.#groups = groups;
    this.#single = this.#groups.length === 1 ? this.#groups[0] : undefined;
    const only = this.limits.length === 1 ? this.limits[0] : undefined;
    const single = this.#single;
    // The fast path builds no ops, so it holds neither leases nor refunds.
    this.#fast = only !== undefined && only.algorithm !== 'concurrency' && only.count !== 'failures' && only.plans === undefined && single !== undefined && isSingleOpStore(single.store) ? { limit: only, store: single.store, group: single } : undefined;
    this.#hasConcurrency = this.limits.some((l) => l.algorithm === 'concurrency');
  }

  get replicas(): number {
    return this.#fallback.replicas;
  }

  breakerStates(): Record<string, 'closed' | 'open' | 'half-open'> {
    return Object.fromEntries(this.#groups.map((g) => [g.name, g.circuit.state]));
  }

  storeHealth(): Record<string, StoreHealth> {
    const now = this.#clock.now();
    return Object.fromEntries(this.#groups.map((g) => [g.name, g.circuit.health(now)]));
  }

  shadowReport(): ShadowReport[] {
    return this.#shadow?.report(this.#clock.now()) ?? [];
  }

  async close(): Promise<void> {
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    // Unspent two-tier allotments go back to the shared store; what fails to go back expires with the state.
    await Promise.all(this.#tiers.map((t) => t.close()));
  }

  check(ctx: RequestContext, options?: CheckOptions): Promise<Decision> {
    try {
      const screen = this.#listed.entries > 0 ? screenRequest(this.limits, this.lists, ctx) : undefined;
      if (screen?.terminal === true) return Promise.resolve(this.#decideListed(screen, options));
      const fast = screen === undefined ? this.#fast : undefined;
      if (fast !== undefined) return Promise.resolve(this.#checkFast(fast, ctx, options));
      const built = this.#build(ctx, options, screen);
      const single = this.#single;
      if (single?.sync === true) return Promise.resolve(this.#decideSync(single, built, screen));
      return this.#checkAsync(built, screen);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  checkSync(ctx: RequestContext, options?: CheckOptions): Decision | undefined {
    const single = this.#single;
    const screen = this.#listed.entries > 0 && (this.#fast !== undefined || single?.sync === true) ? screenRequest(this.limits, this.lists, ctx) : undefined;
    if (screen?.terminal === true) return this.#decideListed(screen, options);
    const fast = screen === undefined ? this.#fast : undefined;
    if (fast !== undefined) return this.#checkFast(fast, ctx, options);
    if (single?.sync !== true) return undefined;
    const built = this.#build(ctx, options, screen);
    return this.#decideSync(single, built, screen);
  }

  async peek(ctx: RequestContext, options?: CheckOptions): Promise<Decision> {
    const screen = this.#listed.entries > 0 ? screenRequest(this.limits, this.lists, ctx) : undefined;
    if (screen?.terminal === true) return this.#decideListed(screen, options, true);
    const { ops, now, keys, planFailed } = this.#build(ctx, options, screen);
    if (planFailed !== undefined) throw unknownPlan(planFailed);
    const results = new Array<StoreOpResult | undefined>(ops.length);
    await Promise.all(
      this.#groups.map(async (g) => {
        const groupOps = present(g, ops);
        if (groupOps.length === 0) return;
        const peek = g.store.peek?.bind(g.store);
        if (peek === undefined) throw unsupported('peek', g);
        const res = await operatorCall(g, 'peek', () => peek(groupOps, now));
        // Nothing was taken: no lease to release, nothing to settle.
        fill(g, ops, res.map((r) => (r.consumed ? { ...r, consumed: false } : r)), results);
      }),
    );
    return this.#decide(ops, results, undefined, now, keys, screen, true);
  }

  async reset(limitName: string, ctx: RequestContext, options?: { readonly by?: string | undefined }): Promise<void> {
    const { limit, raw, by, ops } = resetOps(this.limits, this.#stateKeys, limitName, ctx, options);
    const group = this.#groupOf(limit);
    const clear = group.store.clear?.bind(group.store);
    if (clear === undefined) throw unsupported('reset', group);
    const now = this.#clock.now();
    await operatorCall(group, 'reset', () => clear(ops, now));
    // The fail modes' local state of the key goes too, so an operator's unblock holds during an outage.
    await this.#fallback.store.clear?.(
      ops.map((op) => ({ ...op, spec: this.#fallback.limitFor(op.spec) })),
      now,
    );
    if (resetChannel.hasSubscribers) resetChannel.publish({ limitName: limit.name, keyHash: keyHash(raw), by, store: group.name });
  }

  /** A check the lists decided on their own: no key function, no store call. */
  #decideListed(screen: Screen, options: CheckOptions | undefined, quiet = false): Decision {
    if (options?.cost !== undefined) validCost(options.cost);
    const n = this.limits.length;
    const keys = (options as InternalCheckOptions | undefined)?.[WANT_KEYS] === true ? new Array<string | undefined>(n) : undefined;
    return this.#decide(new Array<StoreOp | undefined>(n), new Array<StoreOpResult | undefined>(n), undefined, this.#clock.now(), keys, screen, quiet);
  }

  /**
   * One limit on a store that decides single ops: the same decision, state
   * change, breaker bookkeeping and events as the general path (`#decide`
   * makes the decision on both), without building a chain. The key function
   * runs once; anything unusual (no key, a throwing key, a store exception)
   * is decided here too, never handed on to run again.
   */
  #checkFast(fast: { readonly limit: CompiledLimit; readonly store: SingleOpStore; readonly group: Group }, ctx: RequestContext, options: CheckOptions | undefined): Decision {
    const limit = fast.limit;
    const override = options?.cost === undefined ? undefined : validCost(options.cost);
    const now = this.#clock.now();
    const raw = runKey(limit, ctx);
    const keys = (options as InternalCheckOptions | undefined)?.[WANT_KEYS] === true ? [raw === KEY_ERROR ? undefined : raw] : undefined;
    if (raw === undefined) return this.#decide(NO_OPS, [undefined], undefined, now, keys);
    const cost = override ?? (limit.costOf === undefined ? limit.cost : runCost(limit, ctx));
    const key = (this.#stateKeys[0] as (raw: string) => string)(raw);
    const f = this.#figures;
    try {
      fast.store.decideOne(limit, key, cost, now, f);
    } catch (error) {
      fast.group.circuit.record(false, now);
      return this.#failedSync(fast.group, [{ spec: limit, key, cost, leaseId: undefined }], error, now, keys);
    }
    fast.group.circuit.record(true, now);
    const r = this.#scratch;
    r.allowed = f.allowed;
    r.consumed = f.allowed && cost > 0;
    r.remaining = f.remaining;
    r.resetMs = f.resetMs;
    r.retryAfterMs = f.allowed ? 0 : f.retryAfterMs;
    r.delayMs = f.allowed ? f.delayMs : 0;
    if (limit.shadow) this.#shadow?.observe(0, key, !f.allowed, now);
    const results = this.#scratchResults;
    results[0] = r;
    // The ops are read only for leases, which the fast path never holds.
    return this.#decide(NO_OPS, results, undefined, now, keys);
  }

  /** The ops of a check (one per limit; `undefined` where the key is absent). Throws `UsageError` on an invalid cost. */
  #build(ctx: RequestContext, options: CheckOptions | undefined, screen?: Screen): Built {
    const costOverride = options?.cost === undefined ? undefined : validCost(options.cost);
    const now = this.#clock.now();
    const limits = this.limits;
    const n = limits.length;
    const ops = new Array<StoreOp | undefined>(n);
    const keys = (options as InternalCheckOptions | undefined)?.[WANT_KEYS] === true ? new Array<string | undefined>(n) : undefined;
    let complete = true;
    let planFailed: Array<StoreOp | undefined> | undefined;
    for (let i = 0; i < n; i++) {
      const limit = limits[i] as CompiledLimit;
      if (screen?.skip[i] === true) {
        complete = false;
        continue;
      }
      const raw = runKey(limit, ctx);
      if (keys !== undefined) keys[i] = raw === KEY_ERROR ? undefined : raw;
      if (raw === undefined) {
        complete = false;
        continue;
      }
      const plan = limit.plans === undefined ? limit : planOf(limit, ctx);
      const op: StoreOp = {
        spec: plan ?? limit,
        key: (this.#stateKeys[i] as (raw: string) => string)(raw),
        cost: costOverride ?? (limit.costOf === undefined ? limit.cost : runCost(limit, ctx)),
        leaseId: limit.algorithm === 'concurrency' ? this.#leasePrefix + String(this.#leaseCounter++) : undefined,
      };
      if (plan !== undefined) {
        ops[i] = op;
      } else {
        // Decided by the limit's fail mode with its own figures, like a store that cannot answer.
        planFailed ??= new Array<StoreOp | undefined>(n);
        planFailed[i] = op;
        complete = false;
      }
    }
    return { ops, now, complete, keys, planFailed };
  }

  /** Decides on the one in-process store of the chain: no promise per store call. */
  #decideSync(single: Group, built: Built, screen?: Screen): Decision {
    const { ops, complete, now, keys, planFailed } = built;
    const n = ops.length;
    let results: Array<StoreOpResult | undefined>;
    const groupOps = complete ? (ops as StoreOp[]) : present(single, ops);
    try {
      const res = groupOps.length === 0 ? [] : (single.store as SyncStore).evaluateSync(groupOps, now);
      single.circuit.record(true, now);
      if (complete) {
        results = res as StoreOpResult[];
      } else {
        results = new Array<StoreOpResult | undefined>(n);
        fill(single, ops, res, results);
      }
    } catch (error) {
      single.circuit.record(false, now);
      return this.#failedSync(single, ops, error, now, keys, screen, planFailed);
    }
    return this.#decide(ops, results, withPlanFailures(ops, planFailed, undefined), now, keys, screen);
  }

  /** The decision when the chain's one in-process store threw: each limit's fail mode. */
  #failedSync(
    group: Group,
    ops: Array<StoreOp | undefined>,
    error: unknown,
    now: number,
    keys: ReadonlyArray<string | undefined> | undefined,
    screen?: Screen,
    planFailed?: ReadonlyArray<StoreOp | undefined>,
  ): Decision {
    const n = ops.length;
    const failed = new Array<boolean>(n).fill(false);
    this.#markFailed(group, ops, error, failed);
    return this.#decide(ops, new Array<StoreOpResult | undefined>(n), withPlanFailures(ops, planFailed, failed), now, keys, screen);
  }

  async #checkAsync(built: Built, screen?: Screen): Promise<Decision> {
    const { ops, now, keys } = built;
    const n = ops.length;
    let results = new Array<StoreOpResult | undefined>(n);
    const failed = new Array<boolean>(n).fill(false);
    const single = this.#single;
    if (single !== undefined && built.complete) {
      // One store and every limit keyed (the common case): the ops as built, the store's results as they come,
      // its one call awaited directly (no Promise.all, no array of promises, no copies).
      const all = ops as StoreOp[];
      try {
        results = (await single.circuit.run(() => single.store.evaluate(all, now), now, all)) as StoreOpResult[];
      } catch (error) {
        this.#markFailed(single, ops, error, failed);
      }
    } else if (single !== undefined) {
      await this.#evaluateGroup(single, ops, now, results, failed);
    } else {
      await Promise.all(this.#groups.map((g) => this.#evaluateGroup(g, ops, now, results, failed)));
    }
    withPlanFailures(ops, built.planFailed, failed);
    // A check its store could not take (open breaker, full, refused at once) is decided without any I/O. Let the
    // event loop turn before answering, so a caller that checks again at once cannot starve the socket reads and
    // timers the store needs to recover (a closed loop of instant fallbacks would otherwise never yield).
    if (failed.includes(true)) await new Promise<void>((resolve) => nextTurn(resolve));
    const decision = this.#decide(ops, results, failed.includes(true) ? failed : undefined, now, keys, screen);
    if (!decision.allowed && this.#groups.length > 1) await this.#compensate(ops, results, decision.results, now);
    return decision;
  }

  /** Since when the store of `limit` has failed for this check's ops (per failure domain on a store that has them). */
  #failingSince(limit: CompiledLimit, ops: ReadonlyArray<StoreOp | undefined>): number | undefined {
    const group = this.#groupOf(limit);
    return group.store.domains === undefined ? group.circuit.failingSince : group.circuit.failingSinceOf(present(group, ops));
  }

  async #evaluateGroup(group: Group, ops: ReadonlyArray<StoreOp | undefined>, now: number, results: Array<StoreOpResult | undefined>, failed: boolean[]): Promise<void> {
    const groupOps = present(group, ops);
    if (groupOps.length === 0) return;
    try {
      const res = await group.circuit.run(() => group.store.evaluate(groupOps, now), now, groupOps);
      fill(group, ops, res, results);
    } catch (error) {
      this.#markFailed(group, ops, error, failed);
    }
  }

  #markFailed(group: Group, ops: ReadonlyArray<StoreOp | undefined>, error: unknown, failed: boolean[]): void {
    const names: string[] = [];
    for (const i of group.indexes) {
      const op = ops[i];
      if (op !== undefined) {
        failed[i] = true;
        names.push(op.spec.name);
      }
    }
    if (error instanceof StoreTimeoutError && timeoutChannel.hasSubscribers) {
      timeoutChannel.publish({ store: group.name, deadlineMs: error.deadlineMs, limits: names });
    }
    if (storeErrorChannel.hasSubscribers) storeErrorChannel.publish({ store: group.name, kind: group.store.kind, reason: failureReason(error), error, limits: names });
  }

  /** The one place a decision is made from the stores' (or the fail modes') results, whatever path got them. */
  #decide(
    ops: ReadonlyArray<StoreOp | undefined>,
    results: Array<StoreOpResult | undefined>,
    failed: readonly boolean[] | undefined,
    now: number,
    keys: ReadonlyArray<string | undefined> | undefined,
    screen?: Screen,
    quiet = false,
  ): Decision {
    const limits = this.limits;
    const n = limits.length;
    let failModes: ReadonlyArray<OnError | undefined> | undefined;
    let local: readonly boolean[] | undefined;
    let failClosed = false;
    if (failed !== undefined) ({ failModes, local, failClosed } = this.#fallback.apply(ops, results, failed, now, (l) => this.#failingSince(l, ops)));
    let allowed = true;
    let deciding: CompiledLimit | undefined;
    let retryAfterMs = 0;
    let delayMs = 0;
    let shadowRejected = false;
    let leases: HeldLease[] | undefined;
    let refunds: HeldLease[] | undefined;
    const out = new Array<LimitResult>(n);
    for (let i = 0; i < n; i++) {
      const limit = limits[i] as CompiledLimit;
      const r = results[i];
      // A plan's own figures (its op carries the plan).
      const p = (ops[i]?.spec ?? limit).params;
      if (r === undefined) {
        out[i] = {
          name: limit.name, allowed: true, remaining: p.limit, resetMs: 0, retryAfterMs: 0, limit: p.limit, windowMs: p.windowMs,
          source: 'none', shadow: limit.shadow, purpose: limit.purpose, onError: failModes?.[i],
          listed: screen === undefined ? undefined : screen.denied !== undefined ? 'deny' : screen.skip[i] === true ? 'allow' : undefined,
        };
        continue;
      }
      out[i] = {
        name: limit.name, allowed: r.allowed, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, limit: p.limit,
        windowMs: p.windowMs, source: local?.[i] === true ? 'local' : failModes?.[i] === 'closed' ? 'none' : 'store', shadow: limit.shadow,
        purpose: limit.purpose, onError: failModes?.[i], listed: undefined,
      };
      // The fast path (no ops) reports its one limit itself.
      if (limit.shadow && ops[i] !== undefined) this.#shadow?.observe(i, ops[i]?.key, !r.allowed, now);
      if (!r.allowed) {
        if (limit.shadow) {
          shadowRejected = true;
        } else {
          allowed = false;
          deciding ??= limit;
          if (r.retryAfterMs > retryAfterMs) retryAfterMs = r.retryAfterMs;
        }
      } else if (r.delayMs > delayMs && !limit.shadow) {
        // A shadow limit never enforces anything, a queue delay included.
        delayMs = r.delayMs;
      }
      if (r.consumed && limit.count === 'failures') {
        const op = ops[i];
        if (op !== undefined) {
          refunds ??= [];
          if (local?.[i] === true) refunds.push({ store: this.#fallback.store, circuit: undefined, op: { ...op, spec: this.#fallback.limitFor(op.spec) }, now });
          else {
            const group = this.#groupOf(limit);
            // The store's clock at the decision goes with the op, so the give-back lands in the window it was counted in.
            refunds.push({ store: group.store, circuit: group.circuit, op: r.decidedAt === undefined ? op : { ...op, decidedAt: r.decidedAt }, now });
          }
        }
      }
      if (r.consumed && limit.algorithm === 'concurrency' && this.#hasConcurrency) {
        const op = ops[i] as StoreOp;
        leases ??= [];
        if (local?.[i] === true) {
          leases.push({ store: this.#fallback.store, circuit: undefined, op: { ...op, spec: this.#fallback.limitFor(op.spec) }, now });
        } else {
          const group = this.#groupOf(limit);
          leases.push({ store: group.store, circuit: group.circuit, op, now });
        }
      }
    }
    if (!allowed) delayMs = 0;
    let outcome: Outcome;
    let status: 200 | 403 | 429 | 503 = 200;
    if (screen?.denied !== undefined) {
      // A deny list matched: not a rate, so no wait helps (retryAfterMs Infinity, no Retry-After over HTTP).
      allowed = false;
      outcome = 'denied';
      status = 403;
      deciding = screen.denied ?? undefined;
      retryAfterMs = Infinity;
    } else if (screen?.terminal === true) {
      outcome = 'allowed-list';
    } else if (!allowed) {
      const decidingIndex = limits.indexOf(deciding as CompiledLimit);
      const decidedFailClosed = failClosed && failModes?.[decidingIndex] === 'closed' && local?.[decidingIndex] !== true;
      outcome = decidedFailClosed ? 'fail-closed' : 'rejected';
      status = decidedFailClosed ? 503 : (deciding as CompiledLimit).status;
    } else if (failModes?.includes('open') === true) {
      outcome = 'fail-open';
    } else if (local?.includes(true) === true) {
      outcome = 'degraded';
    } else {
      outcome = shadowRejected ? 'shadow-rejected' : 'allowed';
    }
    // A rejected chain consumed nothing to give back on success (only countRejected limits consumed, and they count attempts).
    const decision = new CheckDecision(allowed, status, outcome, deciding?.name, retryAfterMs, delayMs, out, leases, allowed ? refunds : undefined, keys);
    if (!quiet && decisionChannel.hasSubscribers) decisionChannel.publish({ decision, now });
    return decision;
  }

  #groupOf(limit: CompiledLimit): Group {
    const name = groupName(limit);
    for (const g of this.#groups) if (g.name === name) return g;
    throw new Error('unreachable: every limit belongs to a group');
  }

  /** Another store rejected: give back what the admitting stores consumed (unless the limit counts rejected attempts). */
  async #compensate(
    ops: ReadonlyArray<StoreOp | undefined>,
    results: ReadonlyArray<StoreOpResult | undefined>,
    reported: readonly LimitResult[],
    now: number,
  ): Promise<void> {
    await Promise.all(
      this.#groups.map(async (g) => {
        const give: StoreOp[] = [];
        const giveLocal: StoreOp[] = [];
        for (const i of g.indexes) {
          const op = ops[i];
          const r = results[i];
          if (op === undefined || r?.consumed !== true || op.spec.countRejected) continue;
          if (reported[i]?.source === 'local') giveLocal.push({ ...op, spec: this.#fallback.limitFor(op.spec) });
          else give.push(r.decidedAt === undefined ? op : { ...op, decidedAt: r.decidedAt });
        }
        if (giveLocal.length > 0) await this.#fallback.store.refund(giveLocal, now);
        if (give.length === 0) return;
        try {
          await g.circuit.run(() => g.store.refund(give, now), now);
        } catch (error) {
          if (storeErrorChannel.hasSubscribers) {
            storeErrorChannel.publish({ store: g.name, kind: g.store.kind, reason: failureReason(error), error, limits: give.map((o) => o.spec.name) });
          }
        }
      }),
    );
  }
}

/**
 * Builds a limiter over the in-process stores `local` supplies (core builds
 * no store itself). Throws `ConfigError` (with a stable `code` and the
 * option's path) on any invalid option or definition. `createLimiter` in
 * the package root is this with the memory store.
 */
export function buildLimiter<Ctx = RequestContext>(options: LimiterOptions<Ctx>, local: LocalStores): Limiter<Ctx> {
  // Key functions take the caller's Ctx; at run time they get whatever check() was given, which is a Ctx.
  return new ChainLimiter(options as unknown as LimiterOptions, local) as unknown as Limiter<Ctx>;
}
