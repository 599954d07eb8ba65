import { createHash } from 'node:crypto';
import { ConfigError, createLimiter, systemClock, type Clock, type Decision, type LimitDefinition, type Limiter, type Store } from 'ratecontract';
import { policyField, rateLimitField, retryAfterSeconds, type AdvertisedLimit } from 'ratecontract/http';
import { descriptorKeyOf, DROP_IN_PURPOSE, UNIT_MS, UNIT_WIRE, type RlsConfig, type RlsKeyContext, type RlsRule, type RlsUnit } from './config.js';
import { matchRequest, type Entry, type Match } from './descriptor-match.js';

/** `RateLimitDescriptor` as the engine reads it (from gRPC or `/json`). */
export interface RlsDescriptor {
  readonly entries: readonly Entry[];
  /** The per-request override of the matched rule's limit. `unit` is `undefined` when the request's unit is unknown. */
  readonly limit?: { readonly requestsPerUnit: number; readonly unit: RlsUnit | undefined } | undefined;
  /** Per-descriptor hits (wins over the request's). */
  readonly hitsAddend?: number | undefined;
}

/** `RateLimitRequest` as the engine reads it. */
export interface RlsRequest {
  readonly domain: string;
  readonly descriptors: readonly RlsDescriptor[];
  /** 0 means 1. */
  readonly hitsAddend: number;
}

export type RlsCode = 'OK' | 'OVER_LIMIT';

/** One `DescriptorStatus`. */
export interface RlsStatus {
  readonly code: RlsCode;
  readonly currentLimit: { readonly requestsPerUnit: number; readonly unit: string; readonly name: string | undefined } | undefined;
  readonly limitRemaining: number;
  /** ms; `undefined` when no limit applied. */
  readonly durationUntilResetMs: number | undefined;
  /** What decided it, for metrics and tests: a rule, unlimited, no rule, blocked (`requests_per_unit: 0`), shadow. */
  readonly result: 'no-rule' | 'unlimited' | 'blocked' | 'within' | 'over' | 'shadow' | 'fail-open' | 'degraded';
}

/** A `RateLimitResponse`. */
export interface RlsResponse {
  readonly overallCode: RlsCode;
  readonly statuses: readonly RlsStatus[];
  readonly responseHeadersToAdd: ReadonlyArray<{ readonly key: string; readonly value: string }>;
}

/** A request the service answers with a gRPC error (the reference's `service_error`), or a rule hard-closed past its grace. */
export class RlsServiceError extends Error {
  /** gRPC status name: `UNKNOWN` for a malformed request (as the reference), `UNAVAILABLE` for a hard-closed rule. */
  readonly grpcCode: 'UNKNOWN' | 'UNAVAILABLE';
  constructor(grpcCode: 'UNKNOWN' | 'UNAVAILABLE', message: string) {
    super(message);
    this.name = 'RlsServiceError';
    this.grpcCode = grpcCode;
  }
}

/** Options of `RlsEngine`. */
export interface RlsEngineOptions {
  /** The default store (memory, or Redis with `--redis`). */
  readonly defaultStore: Store;
  /** The store of rules with `store: local`. */
  readonly localStore: Store;
  readonly clock?: Clock | undefined;
  /** Fill `response_headers_to_add` with `RateLimit-Policy`, `RateLimit` and (over limit) `Retry-After`. Default false. */
  readonly responseHeaders?: boolean | undefined;
  /** Most limiters kept for per-request `limit` overrides (least recently used evicted; their state stays in the store). Default 1024. */
  readonly maxOverrides?: number | undefined;
}

type Ctx = RlsKeyContext;

const MAX_UINT32 = 0xffff_ffff;

/** A rule's limiter with what decides whether a reload may keep it. */
interface Built {
  readonly rule: RlsRule;
  readonly limiter: Limiter<Ctx>;
  readonly signature: string;
}

/** The rule's translated definition with another name and N per unit (a per-request override). */
function definition(rule: RlsRule, name: string, requestsPerUnit: number, unit: RlsUnit): LimitDefinition<Ctx> {
  return { ...(rule.definition ?? OVERRIDE_DEFINITION), name, limit: requestsPerUnit, window: UNIT_MS[unit], shadow: rule.shadow };
}

/** What a reload compares: every clause that changes decisions (not where the rule was written). */
function signature(rule: RlsRule): string {
  return JSON.stringify(rule, (k, v: unknown) => (k === 'file' || k === 'at' || k === 'path' || k === 'compiled' ? undefined : v));
}

/** The counter key of a descriptor: the domain and every entry, length-prefixed so no two descriptors share one by accident. */
export function descriptorKey(domain: string, entries: readonly Entry[], shared: Match['shared']): string {
  let k = `${domain.length}:${domain}`;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i] as Entry;
    const v = shared?.[i] ?? e.value;
    k += `|${e.key.length}:${e.key}=${v}`;
  }
  return k;
}

/**
 * The definition of an override for a descriptor that matched no rule: the
 * reference's fixed window and the drop-in purpose, so the library's
 * default fail mode for it (name, N and window are the override's).
 */
const OVERRIDE_DEFINITION: LimitDefinition<Ctx> = { name: 'override', purpose: DROP_IN_PURPOSE, algorithm: 'fixed-window', limit: 1, window: UNIT_MS.second, key: descriptorKeyOf };

/** The rule of an override for a descriptor that matched no rule. */
function overrideBase(domain: string): Omit<RlsRule, 'id' | 'unit' | 'requestsPerUnit'> {
  return {
    domain,
    path: domain,
    file: '(request)',
    at: 'limit',
    unlimited: false,
    name: undefined,
    replaces: [],
    shadow: false,
    detailedMetric: false,
    store: 'default',
    definition: OVERRIDE_DEFINITION,
    compiled: undefined,
    purposeStated: false,
    reason: undefined,
  };
}

/** What one descriptor is checked against once the rules are chosen. */
interface Planned {
  readonly rule: RlsRule;
  readonly unit: RlsUnit;
  readonly requestsPerUnit: number;
  readonly limiter: Limiter<Ctx> | undefined;
  readonly key: string;
  readonly cost: number;
}

/**
 * Decides `ShouldRateLimit` requests for one loaded config: a limiter per
 * rule (on the default store, or the local one), the reference's matching,
 * and the response built from the library's decisions.
 */
export class RlsEngine {
  readonly config: RlsConfig;
  readonly #options: RlsEngineOptions;
  readonly #clock: Clock;
  readonly #built = new Map<string, Built>();
  readonly #overrides = new Map<string, Built>();
  readonly #maxOverrides: number;

  /** Builds the limiters; with `previous`, keeps the limiters of unchanged rules (their breakers and fallbacks too). */
  constructor(config: RlsConfig, options: RlsEngineOptions, previous?: RlsEngine) {
    this.config = config;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#maxOverrides = options.maxOverrides ?? 1024;
    for (const rule of config.rules) {
      if (rule.unlimited || rule.unit === undefined || rule.requestsPerUnit === 0) continue;
      const sig = signature(rule);
      const old = previous === undefined ? undefined : previous.#built.get(rule.id);
      if (old !== undefined && old.signature === sig) {
        this.#built.set(rule.id, { rule, limiter: old.limiter, signature: sig });
        continue;
      }
      this.#built.set(rule.id, { rule, limiter: this.#limiter(rule, rule.id, rule.requestsPerUnit, rule.unit), signature: sig });
    }
  }

  #limiter(rule: RlsRule, name: string, requestsPerUnit: number, unit: RlsUnit): Limiter<Ctx> {
    const store = rule.store === 'local' ? this.#options.localStore : this.#options.defaultStore;
    // The library compiles the definition again here: it passed the same compiler at load.
    return createLimiter<Ctx>({ limits: [definition(rule, name, requestsPerUnit, unit)], defaultStore: store, clock: this.#clock });
  }

  /** Every limiter now in use (for the metrics bindings). */
  limiters(): Limiter<Ctx>[] {
    return [...[...this.#built.values()].map((b) => b.limiter), ...[...this.#overrides.values()].map((b) => b.limiter)];
  }

  /** Every limiter now in use with its rule's id (the name the admin page shows it under). */
  namedLimiters(): Array<{ readonly name: string; readonly limiter: Limiter<Ctx> }> {
    return [...this.#built.values(), ...this.#overrides.values()].map((b) => ({ name: b.rule.id, limiter: b.limiter }));
  }

  /**
   * Stops the background work of the limiters `next` did not take over;
   * resolves once their unspent two-tier allotments are back in the store.
   */
  async close(next?: RlsEngine): Promise<void> {
    const kept = new Set(next === undefined ? [] : next.limiters());
    await Promise.all(this.limiters().filter((l) => !kept.has(l)).map((l) => l.close()));
  }

  #override(domain: string, match: Match | undefined, requestsPerUnit: number, unit: RlsUnit): Built {
    const base = match?.rule;
    const id = `override-${createHash('sha256').update(`${base?.id ?? domain}\u0000${requestsPerUnit}\u0000${unit}`).digest('hex').slice(0, 16)}`;
    let b = this.#overrides.get(id);
    if (b !== undefined) {
      this.#overrides.delete(id);
      this.#overrides.set(id, b);
      return b;
    }
    const rule: RlsRule = {
      ...(base ?? overrideBase(domain)),
      id,
      unit,
      requestsPerUnit,
      unlimited: false,
      name: undefined,
      replaces: [],
      shadow: false,
    };
    b = { rule, limiter: this.#limiter(rule, id, Math.max(1, requestsPerUnit), unit), signature: '' };
    this.#overrides.set(id, b);
    if (this.#overrides.size > this.#maxOverrides) {
      const [oldest, evicted] = this.#overrides.entries().next().value as [string, Built];
      this.#overrides.delete(oldest);
      // Its leases go back in the background (close() never rejects).
      void evicted.limiter.close();
    }
    return b;
  }

  /**
   * Answers one request. Synchronous when every limiter decides at once (the
   * memory store), else a promise. Throws (or rejects with) `RlsServiceError`
   * for the requests the reference answers with an error.
   */
  decide(request: RlsRequest): RlsResponse | Promise<RlsResponse> {
    if (request.domain === '') throw new RlsServiceError('UNKNOWN', 'rate limit domain must not be empty');
    const n = request.descriptors.length;
    if (n === 0) throw new RlsServiceError('UNKNOWN', 'rate limit descriptor list must not be empty');
    const known = this.config.domains.has(request.domain);
    const requestHits = Math.max(1, request.hitsAddend);
    const statuses = new Array<RlsStatus | undefined>(n);
    const plans = new Array<Planned | undefined>(n);
    let replacing: Set<string> | undefined;
    for (let i = 0; i < n; i++) {
      const d = request.descriptors[i] as RlsDescriptor;
      const match = known ? matchRequest(this.config, request.domain, d.entries) : undefined;
      const cost = Math.min(Number.MAX_SAFE_INTEGER, Math.max(1, d.hitsAddend ?? requestHits));
      if (known && d.limit !== undefined) {
        const unit = d.limit.unit;
        if (unit === undefined) throw new RlsServiceError('UNKNOWN', `descriptors[${i}].limit.unit: unknown unit`);
        let b: Built;
        try {
          b = this.#override(request.domain, match, d.limit.requestsPerUnit, unit);
        } catch (error) {
          // A limit the matched rule's algorithm cannot count (sliding-log past its memory budget): a request the service cannot serve.
          if (error instanceof ConfigError) throw new RlsServiceError('UNKNOWN', `descriptors[${i}].limit: ${String(d.limit.requestsPerUnit)} per ${unit} cannot be applied with the rule's algorithm (${error.message.slice(error.option.length + 2)})`);
          throw error;
        }
        plans[i] = { rule: b.rule, unit, requestsPerUnit: d.limit.requestsPerUnit, limiter: d.limit.requestsPerUnit === 0 ? undefined : b.limiter, key: descriptorKey(request.domain, d.entries, match?.shared), cost };
        continue;
      }
      if (match === undefined) {
        statuses[i] = { code: 'OK', currentLimit: undefined, limitRemaining: 0, durationUntilResetMs: undefined, result: 'no-rule' };
        continue;
      }
      const rule = match.rule;
      if (rule.replaces.length > 0) {
        replacing ??= new Set();
        for (const r of rule.replaces) replacing.add(r);
      }
      if (rule.unlimited || rule.unit === undefined) {
        statuses[i] = { code: 'OK', currentLimit: undefined, limitRemaining: MAX_UINT32, durationUntilResetMs: undefined, result: 'unlimited' };
        continue;
      }
      plans[i] = { rule, unit: rule.unit, requestsPerUnit: rule.requestsPerUnit, limiter: this.#built.get(rule.id)?.limiter, key: descriptorKey(request.domain, d.entries, match.shared), cost };
    }
    const now = this.#clock.now();
    const pending: Array<Promise<void>> = [];
    for (let i = 0; i < n; i++) {
      const p = plans[i];
      if (p === undefined) continue;
      if (replacing !== undefined && p.rule.name !== undefined && replacing.has(p.rule.name)) {
        statuses[i] = { code: 'OK', currentLimit: undefined, limitRemaining: 0, durationUntilResetMs: undefined, result: 'no-rule' };
        continue;
      }
      if (p.limiter === undefined) {
        statuses[i] = blocked(p, now);
        continue;
      }
      const ctx: Ctx = { k: p.key };
      const sync = p.limiter.checkSync(ctx, { cost: p.cost });
      if (sync !== undefined) statuses[i] = status(p, sync);
      else {
        const at = i;
        pending.push(
          p.limiter.check(ctx, { cost: p.cost }).then((d) => {
            statuses[at] = status(p, d);
          }),
        );
      }
    }
    if (pending.length === 0) return this.#respond(statuses as RlsStatus[], plans);
    return Promise.all(pending).then(() => this.#respond(statuses as RlsStatus[], plans));
  }

  #respond(statuses: readonly RlsStatus[], plans: ReadonlyArray<Planned | undefined>): RlsResponse {
    let over = false;
    for (const s of statuses) if (s.code === 'OVER_LIMIT') over = true;
    const overallCode: RlsCode = over ? 'OVER_LIMIT' : 'OK';
    if (this.#options.responseHeaders !== true) return { overallCode, statuses, responseHeadersToAdd: [] };
    return { overallCode, statuses, responseHeadersToAdd: responseHeaders(statuses, plans) };
  }
}

function limitOf(p: Planned): RlsStatus['currentLimit'] {
  return { requestsPerUnit: p.requestsPerUnit, unit: UNIT_WIRE[p.unit], name: p.rule.name };
}

/** `requests_per_unit: 0`: over limit without a store call, reset at the end of the unit's epoch-aligned window (as the reference). */
function blocked(p: Planned, now: number): RlsStatus {
  const w = UNIT_MS[p.unit];
  if (p.rule.shadow) return { code: 'OK', currentLimit: limitOf(p), limitRemaining: 0, durationUntilResetMs: w - (now % w), result: 'shadow' };
  return { code: 'OVER_LIMIT', currentLimit: limitOf(p), limitRemaining: 0, durationUntilResetMs: w - (now % w), result: 'blocked' };
}

function status(p: Planned, d: Decision): RlsStatus {
  if (d.outcome === 'fail-closed') {
    throw new RlsServiceError('UNAVAILABLE', `rule ${p.rule.path} is closed: its store has failed past the grace period (failClosedAfter)`);
  }
  const r = d.results[0];
  const remaining = r === undefined ? 0 : Math.max(0, Math.min(MAX_UINT32, Math.floor(r.remaining)));
  if (r === undefined || r.allowed) {
    const result = d.outcome === 'fail-open' ? 'fail-open' : d.outcome === 'degraded' ? 'degraded' : 'within';
    return { code: 'OK', currentLimit: limitOf(p), limitRemaining: remaining, durationUntilResetMs: r?.resetMs ?? 0, result };
  }
  const wait = Number.isFinite(r.retryAfterMs) ? r.retryAfterMs : r.resetMs;
  if (r.shadow) return { code: 'OK', currentLimit: limitOf(p), limitRemaining: remaining, durationUntilResetMs: wait, result: 'shadow' };
  return { code: 'OVER_LIMIT', currentLimit: limitOf(p), limitRemaining: remaining, durationUntilResetMs: wait, result: 'over' };
}

/** `RateLimit-Policy` and `RateLimit` (draft-10) for every limited, non-shadow descriptor; `Retry-After` when over limit. */
function responseHeaders(statuses: readonly RlsStatus[], plans: ReadonlyArray<Planned | undefined>): Array<{ key: string; value: string }> {
  const advertised: AdvertisedLimit[] = [];
  const names = new Set<string>();
  let retryMs = 0;
  statuses.forEach((s, i) => {
    const p = plans[i];
    if (p === undefined || s.currentLimit === undefined || s.result === 'shadow' || names.has(p.rule.id)) return;
    names.add(p.rule.id);
    const violated = s.code === 'OVER_LIMIT';
    const ms = s.durationUntilResetMs ?? 0;
    if (violated) retryMs = Math.max(retryMs, ms);
    advertised.push({ name: p.rule.id, q: p.requestsPerUnit, w: Math.max(1, Math.ceil(UNIT_MS[p.unit] / 1000)), qu: undefined, pk: undefined, r: s.limitRemaining, t: retryAfterSeconds(ms), violated });
  });
  if (advertised.length === 0) return [];
  const out = [
    { key: 'RateLimit-Policy', value: policyField(advertised) },
    { key: 'RateLimit', value: rateLimitField(advertised) },
  ];
  if (retryMs > 0) out.push({ key: 'Retry-After', value: String(retryAfterSeconds(retryMs)) });
  return out;
}
