import { buildRuntime, type ContractRuntime } from 'ratecontract/config';
import type { RateContractConfig } from 'ratecontract/config';
import { ManualClock } from 'ratecontract';
import { boundKey } from 'ratecontract/internal';
import { decisionKeys, WANT_KEYS } from 'ratecontract/internal';
import type { CheckOptions, Decision, Purpose, RequestContext } from 'ratecontract';
import { resolveClientIp, resolveIpOptions, type ResolvedIpOptions } from 'ratecontract/http';
import type { LogRecord } from './logs.js';
import { SpaceSaving, type TopKey } from './top-keys.js';

/**
 * The engine of `ratecontract replay`: each log record goes through a
 * contract's route table and chain, as the HTTP layer would build its
 * context, on a virtual clock set to the record's time, with every store a
 * memory store. What it keeps is bounded by the contract (a tally per limit,
 * `capacity` counters of heavy hitters each, the first few unrouted lines),
 * never by the log's length; the memory stores hold the keys that are live
 * in a window, up to their `maxKeys`.
 */

/** The tenant header a record's `tenant` is sent as, unless told otherwise. */
export const DEFAULT_TENANT_HEADER = 'x-tenant';

/** Options of one contract's replay. */
export interface ContractRunOptions {
  /** Counters of heavy hitters per limit (see `SpaceSaving`). */
  readonly capacity: number;
  /** The header a record's `tenant` is sent as. Default: the contract's identity header (`http.identify.header`), else `x-tenant`. */
  readonly tenantHeader?: string | undefined;
  /** How many unrouted lines keep their number, method and path. */
  readonly keepUnrouted: number;
  /** Called for every limit that decided a record (it had a key): the limit's name, its bounded key, whether it admitted, and the record's time (`suggest`). */
  readonly observe?: ((limit: string, key: string, allowed: boolean, time: number) => void) | undefined;
}

/** One limit's tally. */
export interface LimitTally {
  readonly name: string;
  readonly purpose: Purpose;
  readonly keySpec: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly shadow: boolean;
  /** `match` of every route whose chain holds this limit. */
  readonly routes: string[];
  /** Requests this limit decided (its chain ran and the request had a value for its key). */
  checked: number;
  /** Requests whose chain holds this limit but that had no value for its key (a `body.*` key: logs have no bodies). */
  unkeyed: number;
  /** Requests this limit said no to (enforced or, for a shadow limit, reported). */
  wouldReject: number;
  /** Requests this limit was the first enforced limit to reject: the answer the client would get. */
  decided: number;
  firstTrip: { readonly time: number; readonly line: number } | undefined;
  /** Keys by rejections. */
  readonly top: SpaceSaving;
}

/** A request no route matched. */
export interface UnroutedLine {
  readonly line: number;
  readonly method: string;
  readonly path: string;
}

/** A contract's totals. */
export interface ContractTotals {
  /** Records replayed. */
  requests: number;
  /** Records whose route has a chain. */
  limited: number;
  /** Records on a route marked `limits: []`. */
  unlimited: number;
  /** Records no route matched (not limited). */
  unrouted: number;
  readonly unroutedLines: UnroutedLine[];
  /** Limited requests the contract's enforced limits reject. */
  rejected: number;
  /** Limited requests admitted that a shadow limit would have rejected. */
  shadowRejected: number;
  /** Requests at least one limit said no to (`rejected + shadowRejected`). */
  wouldReject: number;
}

/** What one request came to: whether some limit said no, and the first that did in chain order, with its key. */
export interface Verdict {
  readonly wouldReject: boolean;
  readonly limit: string | undefined;
  readonly key: string | undefined;
}

const PASS: Verdict = Object.freeze({ wouldReject: false, limit: undefined, key: undefined });
const WANT: CheckOptions = { [WANT_KEYS]: true } as CheckOptions;
const NO_HEADERS = Object.freeze({});

/** One contract replayed: its runtime on memory stores and a virtual clock, and its tallies. */
export class ContractRun {
  readonly config: RateContractConfig;
  readonly tallies: ReadonlyMap<string, LimitTally>;
  readonly totals: ContractTotals;
  /** The header a record's tenant is sent as. */
  readonly tenantHeader: string;
  readonly #runtime: ContractRuntime;
  readonly #clock: ManualClock;
  readonly #ip: ResolvedIpOptions;
  readonly #identifyHeader: string | undefined;
  readonly #query: boolean;
  readonly #leases: boolean;
  readonly #keepUnrouted: number;
  readonly #observe: ContractRunOptions['observe'];

  private constructor(config: RateContractConfig, runtime: ContractRuntime, clock: ManualClock, options: ContractRunOptions) {
    this.config = config;
    this.#runtime = runtime;
    this.#clock = clock;
    this.#keepUnrouted = options.keepUnrouted;
    this.#observe = options.observe;
    // The logged address is the client's (a proxy in front logs what it saw, or what its real-ip module resolved): only the grouping applies.
    this.#ip = resolveIpOptions({ ipv4Prefix: config.http.ipv4Prefix, ipv6Prefix: config.http.ipv6Prefix });
    const id = config.http.identify;
    this.#identifyHeader = id !== undefined && 'header' in id ? id.header.toLowerCase() : undefined;
    this.tenantHeader = (options.tenantHeader ?? this.#identifyHeader ?? DEFAULT_TENANT_HEADER).toLowerCase();
    this.#query = config.compiled.some((l) => l.keySpec.startsWith('query.'));
    this.#leases = config.compiled.some((l) => l.algorithm === 'concurrency');
    const tallies = new Map<string, LimitTally>();
    for (const l of config.compiled) {
      tallies.set(l.name, {
        name: l.name,
        purpose: l.purpose,
        keySpec: l.keySpec,
        algorithm: l.algorithm,
        limit: l.params.limit,
        windowMs: l.params.windowMs,
        shadow: l.shadow,
        routes: config.routes.filter((r) => r.limits.includes(l.name)).map((r) => r.match),
        checked: 0,
        unkeyed: 0,
        wouldReject: 0,
        decided: 0,
        firstTrip: undefined,
        top: new SpaceSaving(options.capacity),
      });
    }
    this.tallies = tallies;
    this.totals = { requests: 0, limited: 0, unlimited: 0, unrouted: 0, unroutedLines: [], rejected: 0, shadowRejected: 0, wouldReject: 0 };
  }

  /** Builds the contract's runtime with every store in memory and a virtual clock. */
  static async start(config: RateContractConfig, options: ContractRunOptions): Promise<ContractRun> {
    const clock = new ManualClock(0);
    const runtime = await buildRuntime(config, { clock, memoryStores: true });
    return new ContractRun(config, runtime, clock, options);
  }

  /** The context the limits' keys see for a record, as the HTTP layer builds it for the request it stands for. */
  context(r: LogRecord): RequestContext {
    const headers: Record<string, string> = {};
    if (r.tenant !== undefined) headers[this.tenantHeader] = r.tenant;
    // With an identity header the HTTP layer's principal is that header; a logged principal is the identity it resolved, and wins.
    const principal = r.principal ?? (this.#identifyHeader !== undefined ? headers[this.#identifyHeader] : undefined);
    return {
      ip: resolveClientIp(r.ip, NO_HEADERS, this.#ip) ?? r.ip,
      principal,
      method: r.method,
      path: r.path,
      headers,
      query: this.#query ? parseQuery(r.query) : undefined,
    };
  }

  /**
   * Replays one record (records come in time order). A promise only when the
   * chain needs one (limits on two stores, a concurrency lease to release),
   * so the common case costs no microtask.
   */
  replay(r: LogRecord): Verdict | Promise<Verdict> {
    const t = this.totals;
    t.requests++;
    const match = this.#runtime.route(r.method, r.path);
    if (match === undefined) {
      t.unrouted++;
      if (t.unroutedLines.length < this.#keepUnrouted) t.unroutedLines.push({ line: r.line, method: r.method, path: r.path });
      return PASS;
    }
    const limiter = match.value.limiter;
    if (limiter === undefined) {
      t.unlimited++;
      return PASS;
    }
    t.limited++;
    this.#clock.set(r.time);
    const ctx = this.context(r);
    const decided = limiter.checkSync?.(ctx, WANT);
    if (decided !== undefined && !this.#leases) return this.#tally(r, decided);
    return (async () => {
      const decision = decided ?? (await limiter.check(ctx, WANT));
      const verdict = this.#tally(r, decision);
      // A log has no request durations: a concurrency lease ends with its check.
      if (this.#leases) await decision.release();
      return verdict;
    })();
  }

  #tally(r: LogRecord, decision: Decision): Verdict {
    const t = this.totals;
    const keys = decisionKeys(decision) ?? [];
    let first: Verdict | undefined;
    const results = decision.results;
    for (let i = 0; i < results.length; i++) {
      const res = results[i] as Decision['results'][number];
      const tally = this.tallies.get(res.name) as LimitTally;
      const key = keys[i];
      if (key === undefined) {
        tally.unkeyed++;
        continue;
      }
      tally.checked++;
      if (this.#observe !== undefined) this.#observe(res.name, boundKey(key), res.allowed, r.time);
      if (res.allowed) continue;
      tally.wouldReject++;
      tally.firstTrip ??= { time: r.time, line: r.line };
      const bounded = boundKey(key);
      tally.top.add(bounded);
      first ??= { wouldReject: true, limit: res.name, key: bounded };
    }
    if (decision.limitName !== undefined) (this.tallies.get(decision.limitName) as LimitTally).decided++;
    if (!decision.allowed) t.rejected++;
    else if (decision.outcome === 'shadow-rejected') t.shadowRejected++;
    if (first !== undefined) t.wouldReject++;
    return first ?? PASS;
  }

  /** Stops the runtime (discovery heartbeats). */
  async close(): Promise<void> {
    await this.#runtime.close();
  }
}

function parseQuery(q: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  if (q === '') return out;
  for (const [k, v] of new URLSearchParams(q)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

/** The separator of limit and key in the difference's key counters (neither a limit name nor a bounded key holds it). */
const SEP = '\u0000';

/** The difference between a new contract and an old one over the same requests. */
export class ContractDiff {
  /** Requests the new contract would reject that the old one would not. */
  newlyRejected = 0;
  /** By the new contract's first limit to say no. */
  readonly newlyByLimit = new Map<string, number>();
  /** By that limit and its key. */
  readonly newlyByKey: SpaceSaving;
  /** Requests the old contract would reject that the new one would not. */
  noLongerRejected = 0;
  /** By the old contract's first limit to say no. */
  readonly noLongerByLimit = new Map<string, number>();
  readonly noLongerByKey: SpaceSaving;

  constructor(capacity: number) {
    this.newlyByKey = new SpaceSaving(capacity);
    this.noLongerByKey = new SpaceSaving(capacity);
  }

  add(next: Verdict, old: Verdict): void {
    if (next.wouldReject === old.wouldReject) return;
    const v = next.wouldReject ? next : old;
    const limit = v.limit as string;
    if (next.wouldReject) {
      this.newlyRejected++;
      this.newlyByLimit.set(limit, (this.newlyByLimit.get(limit) ?? 0) + 1);
      this.newlyByKey.add(limit + SEP + (v.key as string));
    } else {
      this.noLongerRejected++;
      this.noLongerByLimit.set(limit, (this.noLongerByLimit.get(limit) ?? 0) + 1);
      this.noLongerByKey.add(limit + SEP + (v.key as string));
    }
  }
}

/** A `ContractDiff` key counter split back into limit and key. */
export function splitDiffKey(top: TopKey): { limit: string; key: string; count: number; error: number } {
  const at = top.key.indexOf(SEP);
  return { limit: top.key.slice(0, at), key: top.key.slice(at + 1), count: top.count, error: top.error };
}
