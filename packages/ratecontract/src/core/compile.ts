import { algorithms } from '../algorithms/registry.js';
import { MAX_PRECISION } from '../algorithms/sub-windows.js';
import { bucketScaleProblem } from '../algorithms/scale.js';
import type { AlgorithmName } from '../algorithms/types.js';
import { parseDuration } from './duration.js';
import { ConfigError } from './errors.js';
import { AccessList, type ListCounter } from './access-list.js';
import { compileKey } from './request-key.js';
import { didYouMean } from './suggest.js';
import type { AlgorithmParams } from '../algorithms/types.js';
import { refuseUnknown } from './options.js';
import type { CompiledLimit, CompiledTier, LimitDefinition, OnError, PlanDefinition, Purpose, RequestContext } from './types.js';

/**
 * `costFromContentLength`: the request's content bytes, at least 1.
 * RFC 9112 section 6.3: a request with `Transfer-Encoding` has a body whose
 * length is unknown here (it overrides any `Content-Length`); one with a
 * `Content-Length` has that many bytes; one with neither has no body, and
 * costs what an empty one does (1). Throws (the strict side: capacity + 1)
 * on a body of unknown length, an invalid or disagreeing `Content-Length`,
 * or a context without headers, which cannot say whether there is a body.
 */
function contentLengthCost(ctx: RequestContext): number {
  const headers = ctx.headers;
  if (headers === undefined) throw new TypeError('costFromContentLength: the context has no headers, so the body length is unknown');
  if (headers['transfer-encoding'] !== undefined) throw new TypeError('costFromContentLength: a body with Transfer-Encoding has no declared length');
  const v = headers['content-length'];
  if (v === undefined) return 1;
  const values = typeof v === 'string' ? [v] : v;
  const text = values[0];
  if (text === undefined || !/^\d{1,15}$/.test(text) || values.some((x) => x !== text)) throw new TypeError('costFromContentLength: the request declares no valid Content-Length');
  return Math.max(1, Number(text));
}

/** What a limit, store or other name must match. */
export const NAME_PATTERN = /^[a-z0-9_-]{1,64}$/;
const NAME = NAME_PATTERN;
/** Every option a limit definition accepts; anything else is refused (a misspelt option must not drop a clause). */
export const LIMIT_OPTIONS: readonly string[] = Object.freeze([
  'name', 'purpose', 'onError', 'acknowledgeFailOpen', 'algorithm', 'limit', 'window', 'burst', 'precision', 'mode', 'key',
  'cost', 'reason', 'shadow', 'store', 'countRejected', 'status', 'failClosedAfter', 'allow', 'deny', 'costFromContentLength', 'count', 'failureStatus', 'plans', 'plan', 'tier', 'keySlots',
]);
const KNOWN: ReadonlySet<string> = new Set(LIMIT_OPTIONS);
/** Largest `max(limit, burst) * window` the algorithms count in exact units (the range accepted before quota-sized limits). */
const EXACT_PRODUCT = 2 ** 49;
/** Quota-sized limits (beyond EXACT_PRODUCT): largest limit or burst, 2^40 (about 1.1e12). */
export const MAX_QUOTA = 2 ** 40;
/** Quota-sized limits: longest window, 2^35 ms (about 397.7 days). */
export const MAX_QUOTA_WINDOW_MS = 2 ** 35;
/** Sliding-log beyond EXACT_PRODUCT: most log entries one key may hold (its memory budget). */
export const SLIDING_LOG_MAX_ENTRIES = 100_000;
/** Largest `keySlots`: 2^32 slots. */
export const MAX_KEY_SLOTS = 2 ** 32;
/** Default `failClosedAfter`: how long a `closed` limit decides locally before it rejects. */
export const DEFAULT_FAIL_CLOSED_AFTER_MS = 30_000;

function positiveInt(v: unknown, code: 'RC_INVALID_LIMIT' | 'RC_INVALID_BURST' | 'RC_INVALID_COST', option: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) {
    throw new ConfigError(code, option, `must be a positive integer, got ${typeof v === 'number' ? String(v) : typeof v}`);
  }
  return v;
}

function optionalBoolean(v: unknown, option: string): boolean {
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw new ConfigError('RC_INVALID_OPTION', option, `must be a boolean, got ${typeof v}`);
  return v;
}

function optionalText(v: unknown, option: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new ConfigError('RC_INVALID_OPTION', option, `must be a string, got ${typeof v}`);
  return v;
}

/**
 * Refuses a limit the algorithm cannot count exactly or strictly (docs/limits.md,
 * "Quota-sized limits"). Within `max(limit, burst) * window <= 2^49` every
 * algorithm counts exactly, as before. Beyond it, up to limit and burst 2^40
 * and windows of 2^35 ms: fixed-window, sliding-window and concurrency stay
 * exact; the buckets count in scaled units (rounded toward the stricter
 * answer) and need their bucket to fit; sliding-log needs its log to fit
 * its memory budget.
 */
function checkMagnitude(algorithm: AlgorithmName, p: { limit: number; windowMs: number; burst: number; queue: boolean }, where: string): void {
  const most = Math.max(p.limit, p.burst);
  if (most * p.windowMs <= EXACT_PRODUCT) return;
  if (most > MAX_QUOTA || p.windowMs > MAX_QUOTA_WINDOW_MS) {
    throw new ConfigError(
      'RC_INVALID_WINDOW',
      `${where}window`,
      `limit/burst times window (ms) must stay within 2^49, or limit/burst within 2^40 (1099511627776) and window within 2^35 ms (about 397 days), for exact integer arithmetic; got ${most} x ${p.windowMs}`,
    );
  }
  if (algorithm === 'sliding-log') {
    const entries = Math.min(p.limit, p.windowMs);
    if (entries > SLIDING_LOG_MAX_ENTRIES) {
      throw new ConfigError(
        'RC_INVALID_LIMIT',
        `${where}limit`,
        `sliding-log keeps up to min(limit, window in ms) = ${entries} log entries per key, above its memory budget of ${SLIDING_LOG_MAX_ENTRIES} entries (the budget applies once limit x window exceeds 2^49); use sliding-window or gcra for quota-sized limits`,
      );
    }
  }
  if (algorithm === 'token-bucket' || algorithm === 'leaky-bucket' || algorithm === 'gcra') {
    const problem = bucketScaleProblem(p);
    if (problem !== undefined) throw new ConfigError('RC_INVALID_WINDOW', `${where}window`, `${problem}, for exact integer arithmetic`);
  }
}

/** `precision`: sliding-window only, an integer from 1 to MAX_PRECISION; 1 when absent. */
function compilePrecision(v: unknown, algorithm: AlgorithmName, where: string): number {
  if (v === undefined) return 1;
  if (algorithm !== 'sliding-window') throw new ConfigError('RC_INVALID_OPTION', `${where}precision`, `applies to sliding-window only, not ${algorithm}`);
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1 || v > MAX_PRECISION) {
    throw new ConfigError('RC_INVALID_OPTION', `${where}precision`, `must be an integer from 1 to ${MAX_PRECISION} (sub-windows per window), got ${typeof v === 'number' ? String(v) : typeof v}`);
  }
  return v;
}

/** The sub-windows must tile the window in whole milliseconds. */
function checkPrecisionWindow(precision: number, windowMs: number, option: string): void {
  if (precision > 1 && windowMs % precision !== 0) {
    throw new ConfigError('RC_INVALID_WINDOW', option, `${windowMs} ms is not a multiple of precision ${precision}: sub-windows must be whole milliseconds (try ${Math.max(precision, Math.round(windowMs / precision) * precision)} ms)`);
  }
}

/** Algorithms a two-tier mode supports (allotments and the pre-filter rest on counts that only fall with time). */
export const TIER_ALGORITHMS: readonly AlgorithmName[] = Object.freeze(['fixed-window', 'sliding-window', 'token-bucket', 'gcra']);
const TIER_MODES = ['allotment', 'pre-filter'];
const ALLOTMENT_OPTIONS = ['mode', 'maxAllotment', 'allotmentLifetime', 'maxKeys'];
const PRE_FILTER_OPTIONS = ['mode', 'maxKeys'];
const DEFAULT_TIER_KEYS = 10_000;

function tierKeys(v: unknown, option: string): number {
  if (v === undefined) return DEFAULT_TIER_KEYS;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw new ConfigError('RC_INVALID_OPTION', option, `must be a positive integer, got ${typeof v === 'number' ? String(v) : typeof v}`);
  return v;
}

/** Validates `tier`: its mode, its options, and that the algorithm and the other clauses allow it. */
function compileTier(v: unknown, where: string, algorithm: AlgorithmName, windowMs: number, countRejected: boolean, capacity: number): CompiledTier | undefined {
  if (v === undefined) return undefined;
  const at = `${where}tier`;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError('RC_INVALID_OPTION', at, "must be { mode: 'allotment' } or { mode: 'pre-filter' }");
  const o = v as Record<string, unknown>;
  if (o.mode !== 'allotment' && o.mode !== 'pre-filter') {
    // 'lease' was the quota mode's name before 0.1.0; a lease is now a concurrency lease only.
    const hint = o.mode === 'lease' ? `; did you mean "allotment"? (quota held by one process is an allotment; "lease" names concurrency leases only)` : typeof o.mode === 'string' ? didYouMean(o.mode, TIER_MODES) : '';
    throw new ConfigError('RC_INVALID_OPTION', `${at}.mode`, `must be 'allotment' or 'pre-filter', got ${JSON.stringify(o.mode)}${hint}`);
  }
  refuseUnknown(o, o.mode === 'allotment' ? ALLOTMENT_OPTIONS : PRE_FILTER_OPTIONS, at);
  if (!TIER_ALGORITHMS.includes(algorithm)) {
    throw new ConfigError('RC_INVALID_OPTION', at, `tier mode '${o.mode}' supports ${TIER_ALGORITHMS.join(', ')}, not ${algorithm}`);
  }
  if (countRejected) throw new ConfigError('RC_INVALID_OPTION', at, `does not apply with countRejected: a locally decided request would not count the attempts the store counts`);
  const maxKeys = tierKeys(o.maxKeys, `${at}.maxKeys`);
  if (o.mode === 'pre-filter') return { mode: 'pre-filter', maxKeys };
  let maxAllotment: number | undefined;
  if (o.maxAllotment !== undefined) {
    if (typeof o.maxAllotment !== 'number' || !Number.isSafeInteger(o.maxAllotment) || o.maxAllotment < 1) {
      throw new ConfigError('RC_INVALID_OPTION', `${at}.maxAllotment`, `must be a positive integer, got ${typeof o.maxAllotment === 'number' ? String(o.maxAllotment) : typeof o.maxAllotment}`);
    }
    if (o.maxAllotment > capacity) throw new ConfigError('RC_INVALID_OPTION', `${at}.maxAllotment`, `must be at most the limit's capacity ${capacity}, got ${o.maxAllotment}`);
    maxAllotment = o.maxAllotment;
  }
  const allotmentLifetimeMs = o.allotmentLifetime === undefined ? Math.max(1, Math.floor(windowMs / 10)) : parseDuration(o.allotmentLifetime, `${at}.allotmentLifetime`);
  return { mode: 'allotment', maxAllotment, allotmentLifetimeMs, maxKeys };
}

const DEFAULT_FAILURE = (status: number): boolean => status >= 400;

function failurePredicate(v: unknown, option: string): (status: number) => boolean {
  if (v === undefined) return DEFAULT_FAILURE;
  if (typeof v === 'function') return (status) => (v as (status: number) => unknown)(status) === true;
  if (Array.isArray(v) && v.length > 0 && v.every((x) => Number.isInteger(x) && (x as number) >= 100 && (x as number) <= 599)) {
    const set = new Set(v as number[]);
    return (status) => set.has(status);
  }
  throw new ConfigError('RC_INVALID_OPTION', option, 'must be a non-empty array of HTTP statuses (100-599) or a function of the status');
}

/** Validates one definition and normalises it. Throws `ConfigError` naming the option. */
export function compileLimit(def: LimitDefinition, at: string, storeNames: ReadonlySet<string>, counter: ListCounter = { entries: 0 }): CompiledLimit {
  if (def === null || typeof def !== 'object') {
    throw new ConfigError('RC_INVALID_OPTION', at, 'a limit definition must be an object');
  }
  for (const prop of Object.keys(def)) {
    if (!KNOWN.has(prop)) throw new ConfigError('RC_INVALID_OPTION', `${at}.${prop}`, `unknown option ${JSON.stringify(prop)}${didYouMean(prop, LIMIT_OPTIONS)}`);
  }
  if (typeof def.name !== 'string' || !NAME.test(def.name)) {
    throw new ConfigError('RC_INVALID_NAME', `${at}.name`, `must match [a-z0-9_-]{1,64}, got ${JSON.stringify(def.name)}`);
  }
  const name = def.name;
  const where = `${at}.`;
  if (def.purpose === undefined) {
    throw new ConfigError('RC_MISSING_PURPOSE', `${where}purpose`, `limit "${name}" has no purpose; say 'abuse' (security control) or 'shedding' (capacity). There is no default.`);
  }
  if (def.purpose !== 'abuse' && def.purpose !== 'shedding') {
    throw new ConfigError('RC_INVALID_PURPOSE', `${where}purpose`, `must be 'abuse' or 'shedding', got ${JSON.stringify(def.purpose)}`);
  }
  const purpose: Purpose = def.purpose;
  // The one place the fail mode's default is written: rls rules and `audit` read it from the compiled limit.
  const onError: OnError = def.onError ?? (purpose === 'abuse' ? 'closed' : 'degraded');
  if (onError !== 'open' && onError !== 'degraded' && onError !== 'closed') {
    throw new ConfigError('RC_INVALID_OPTION', `${where}onError`, `must be 'open', 'degraded' or 'closed', got ${JSON.stringify(def.onError)}`);
  }
  const acknowledgeFailOpen = optionalText(def.acknowledgeFailOpen, `${where}acknowledgeFailOpen`);
  if (onError === 'open' && purpose === 'abuse' && (acknowledgeFailOpen === undefined || acknowledgeFailOpen.trim() === '')) {
    throw new ConfigError(
      'RC_FAIL_OPEN_UNACKNOWLEDGED',
      `${where}acknowledgeFailOpen`,
      `limit "${name}" is an abuse limit with onError 'open': an attacker who can break the store gets unmetered attempts. Use 'closed', or state why failing open is acceptable in acknowledgeFailOpen.`,
    );
  }
  const algorithm: AlgorithmName = def.algorithm ?? 'gcra';
  // Typed as a name, but a config file or plain JS may hand anything: an object used as a key would be converted (and could throw).
  const algo = typeof algorithm === 'string' && Object.hasOwn(algorithms, algorithm) ? algorithms[algorithm] : undefined;
  if (algo === undefined) {
    throw new ConfigError('RC_UNKNOWN_ALGORITHM', `${where}algorithm`, `unknown algorithm ${JSON.stringify(def.algorithm)}; expected one of ${Object.keys(algorithms).join(', ')}${typeof def.algorithm === 'string' ? didYouMean(def.algorithm, Object.keys(algorithms)) : ''}`);
  }
  const limit = positiveInt(def.limit, 'RC_INVALID_LIMIT', `${where}limit`);
  const windowMs = parseDuration(def.window, `${where}window`);
  if (def.burst !== undefined && !algo.usesBurst) {
    throw new ConfigError('RC_INVALID_BURST', `${where}burst`, `does not apply to ${algorithm}; it applies to token-bucket, leaky-bucket and gcra`);
  }
  const burst = def.burst === undefined ? limit : positiveInt(def.burst, 'RC_INVALID_BURST', `${where}burst`);
  if (def.mode !== undefined) {
    if (algorithm !== 'leaky-bucket') throw new ConfigError('RC_INVALID_OPTION', `${where}mode`, `applies to leaky-bucket only`);
    if (def.mode !== 'meter' && def.mode !== 'queue') throw new ConfigError('RC_INVALID_OPTION', `${where}mode`, `must be 'meter' or 'queue', got ${JSON.stringify(def.mode)}`);
  }
  const precision = compilePrecision(def.precision, algorithm, where);
  checkPrecisionWindow(precision, windowMs, `${where}window`);
  const params: AlgorithmParams = precision > 1 ? { limit, windowMs, burst, queue: def.mode === 'queue', precision } : { limit, windowMs, burst, queue: def.mode === 'queue' };
  checkMagnitude(algorithm, params, where);
  const fromLength = optionalBoolean(def.costFromContentLength, `${where}costFromContentLength`);
  if (fromLength && def.cost !== undefined) throw new ConfigError('RC_INVALID_COST', `${where}costFromContentLength`, 'applies without `cost`: the cost is the declared Content-Length');
  const costFn = typeof def.cost === 'function' ? def.cost : undefined;
  const costOf = fromLength ? contentLengthCost : costFn;
  const cost = def.cost === undefined || costFn !== undefined ? 1 : positiveInt(def.cost, 'RC_INVALID_COST', `${where}cost`);
  if (cost > algo.capacity(params)) {
    throw new ConfigError('RC_BURST_BELOW_COST', `${where}${algo.usesBurst ? 'burst' : 'limit'}`, `${algo.usesBurst ? 'burst' : 'limit'} ${algo.capacity(params)} is below the cost ${cost} of one request: no request could ever be admitted`);
  }
  const keySpec = def.key ?? 'ip';
  const key = compileKey(keySpec, `${where}key`);
  const storeName = optionalText(def.store, `${where}store`);
  if (storeName !== undefined && !storeNames.has(storeName)) {
    throw new ConfigError('RC_UNKNOWN_STORE', `${where}store`, `no store named ${JSON.stringify(storeName)}; known stores: ${[...storeNames].join(', ') || '(none: pass createLimiter({ stores }))'}`);
  }
  if (def.status !== undefined && def.status !== 429 && def.status !== 503) {
    throw new ConfigError('RC_INVALID_OPTION', `${where}status`, `must be 429 or 503, got ${JSON.stringify(def.status)}`);
  }
  if (def.failClosedAfter !== undefined && onError !== 'closed') {
    const why = def.onError === undefined ? `, the default for ${purpose}` : '';
    throw new ConfigError('RC_INVALID_OPTION', `${where}failClosedAfter`, `applies to onError 'closed' only (this limit's is '${onError}'${why})`);
  }
  const failClosedAfterMs =
    def.failClosedAfter === undefined ? DEFAULT_FAIL_CLOSED_AFTER_MS : def.failClosedAfter === 0 ? 0 : parseDuration(def.failClosedAfter, `${where}failClosedAfter`);
  const count = def.count ?? 'all';
  if (count !== 'all' && count !== 'failures') throw new ConfigError('RC_INVALID_OPTION', `${where}count`, `must be 'all' or 'failures', got ${JSON.stringify(def.count)}`);
  if (count === 'failures' && algorithm === 'concurrency') throw new ConfigError('RC_INVALID_OPTION', `${where}count`, `'failures' does not apply to concurrency (a lease is released when the work ends)`);
  const isFailure = failurePredicate(def.failureStatus, `${where}failureStatus`);
  const countRejected = optionalBoolean(def.countRejected, `${where}countRejected`);
  if (precision > 1 && def.tier !== undefined) throw new ConfigError('RC_INVALID_OPTION', `${where}tier`, 'cannot be combined with `precision` above 1 yet');
  const tier = compileTier(def.tier, where, algorithm, windowMs, countRejected, algo.capacity(params));
  if (def.failureStatus !== undefined && count !== 'failures') throw new ConfigError('RC_INVALID_OPTION', `${where}failureStatus`, `applies with count: 'failures' only`);
  const keySlots = def.keySlots;
  if (keySlots !== undefined && (typeof keySlots !== 'number' || !Number.isSafeInteger(keySlots) || keySlots < 1 || keySlots > MAX_KEY_SLOTS)) {
    throw new ConfigError('RC_INVALID_OPTION', `${where}keySlots`, `must be an integer from 1 to 2^32 (${MAX_KEY_SLOTS}), got ${typeof keySlots === 'number' ? String(keySlots) : typeof keySlots}`);
  }
  const compiled: CompiledLimit = {
    name,
    purpose,
    count,
    keySlots,
    isFailure,
    onError,
    algorithm,
    params,
    keySpec: typeof keySpec === 'function' ? 'function' : keySpec,
    key,
    cost,
    costOf,
    costSpec: fromLength ? 'content-length' : costFn !== undefined ? 'function' : 'static',
    reason: optionalText(def.reason, `${where}reason`),
    acknowledgeFailOpen,
    shadow: optionalBoolean(def.shadow, `${where}shadow`),
    storeName,
    countRejected,
    status: def.status ?? (keySpec === 'global' ? 503 : 429),
    failClosedAfterMs,
    allow: new AccessList('allow', name, counter, def.allow, `${where}allow`),
    deny: new AccessList('deny', name, counter, def.deny, `${where}deny`),
    // A precision of its own is a state shape of its own: its keys never meet another precision's (docs/redis.md, "Rolling deploys").
    id: precision > 1 ? `${name}:${algorithm}/${precision}` : `${name}:${algorithm}`,
    tier,
  };
  if (def.plans === undefined) {
    if (def.plan !== undefined) throw new ConfigError('RC_INVALID_OPTION', `${where}plan`, 'applies with `plans` only (the table of plans it names)');
    return compiled;
  }
  if (tier !== undefined) {
    // An allotment is drawn and spent under one limit's figures; a key that changes plan mid-allotment would spend it under another's.
    throw new ConfigError('RC_INVALID_OPTION', `${where}tier`, 'cannot be combined with `plans` yet: give each plan its own limit to use a two-tier mode');
  }
  return compilePlans(compiled, def, where, algo.usesBurst);
}

const PLAN_OPTIONS: readonly string[] = ['limit', 'window', 'burst'];
/** Most plans one limit may define. */
const MAX_PLANS = 256;

/** Whether a state written under `a` means the same under `b` (docs/limits.md, "Plans"): same window, both counted in exact units. */
function sameUnits(a: AlgorithmParams, b: AlgorithmParams): boolean {
  return a.windowMs === b.windowMs && Math.max(a.limit, a.burst) * a.windowMs <= EXACT_PRODUCT && Math.max(b.limit, b.burst) * b.windowMs <= EXACT_PRODUCT;
}

/** Compiles a limit's plan table: each plan a variant of `base` with its own params, checked like a limit. */
function compilePlans(base: CompiledLimit, def: LimitDefinition, where: string, usesBurst: boolean): CompiledLimit {
  const table = def.plans as unknown;
  if (table === null || typeof table !== 'object' || Array.isArray(table) || Object.keys(table).length === 0) {
    throw new ConfigError('RC_INVALID_OPTION', `${where}plans`, 'must be an object of plans by name, for example { free: { limit: 100 }, pro: { limit: 1000 } }');
  }
  const names = Object.keys(table);
  if (names.length > MAX_PLANS) throw new ConfigError('RC_INVALID_OPTION', `${where}plans`, `at most ${MAX_PLANS} plans, got ${names.length}`);
  if (def.plan === undefined) throw new ConfigError('RC_INVALID_OPTION', `${where}plan`, "is required with `plans`: a key spec ('header.x-plan', 'principal') or a function giving the request's plan name");
  const planOf = compileKey(def.plan, `${where}plan`);
  const plans = new Map<string, CompiledLimit>();
  const shared: AlgorithmParams[] = [base.params];
  for (const planName of names) {
    const at = `${where}plans.${planName}`;
    if (!NAME.test(planName)) throw new ConfigError('RC_INVALID_NAME', at, `plan names must match [a-z0-9_-]{1,64}, got ${JSON.stringify(planName)}`);
    const plan = (table as Record<string, PlanDefinition>)[planName];
    if (plan === null || typeof plan !== 'object' || Array.isArray(plan)) throw new ConfigError('RC_INVALID_OPTION', at, 'a plan must be an object with limit, window or burst');
    for (const prop of Object.keys(plan)) {
      if (!PLAN_OPTIONS.includes(prop)) throw new ConfigError('RC_INVALID_OPTION', `${at}.${prop}`, `unknown plan option ${JSON.stringify(prop)}; a plan sets limit, window or burst${didYouMean(prop, PLAN_OPTIONS)}`);
    }
    const limit = plan.limit === undefined ? base.params.limit : positiveInt(plan.limit, 'RC_INVALID_LIMIT', `${at}.limit`);
    const windowMs = plan.window === undefined ? base.params.windowMs : parseDuration(plan.window, `${at}.window`);
    if (plan.burst !== undefined && !usesBurst) throw new ConfigError('RC_INVALID_BURST', `${at}.burst`, `does not apply to ${base.algorithm}; it applies to token-bucket, leaky-bucket and gcra`);
    const burst = plan.burst !== undefined ? positiveInt(plan.burst, 'RC_INVALID_BURST', `${at}.burst`) : plan.limit !== undefined ? limit : base.params.burst;
    const precision = base.params.precision;
    if (precision !== undefined) checkPrecisionWindow(precision, windowMs, `${at}.window`);
    const params: AlgorithmParams = precision !== undefined ? { limit, windowMs, burst, queue: base.params.queue, precision } : { limit, windowMs, burst, queue: base.params.queue };
    checkMagnitude(base.algorithm, params, `${at}.`);
    const capacity = algorithms[base.algorithm].capacity(params);
    if (base.cost > capacity) {
      throw new ConfigError('RC_BURST_BELOW_COST', `${at}.${usesBurst ? 'burst' : 'limit'}`, `${usesBurst ? 'burst' : 'limit'} ${capacity} is below the cost ${base.cost} of one request: no request could ever be admitted`);
    }
    const share = sameUnits(params, base.params);
    if (share) shared.push(params);
    plans.set(planName, { ...base, params, plan: planName, id: share ? base.id : `${base.id}:plan-${planName}` });
  }
  const sharedParams = shared.length > 1 ? shared : undefined;
  for (const [planName, p] of plans) plans.set(planName, { ...p, plans, planOf, sharedParams: p.id === base.id ? sharedParams : undefined });
  return { ...base, plans, planOf, sharedParams };
}

/** Validates a whole chain: at least one limit, unique names. */
export function compileLimits(defs: readonly LimitDefinition[], storeNames: ReadonlySet<string>, counter: ListCounter = { entries: 0 }): CompiledLimit[] {
  if (!Array.isArray(defs) || defs.length === 0) {
    throw new ConfigError('RC_INVALID_OPTION', 'limits', 'must be a non-empty array of limit definitions');
  }
  const seen = new Set<string>();
  return defs.map((def: LimitDefinition, i) => {
    const compiled = compileLimit(def, `limits[${i}]`, storeNames, counter);
    if (seen.has(compiled.name)) {
      throw new ConfigError('RC_DUPLICATE_NAME', `limits[${i}].name`, `duplicate limit name ${JSON.stringify(compiled.name)}; names must be unique`);
    }
    seen.add(compiled.name);
    return compiled;
  });
}
