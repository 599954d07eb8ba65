import { algorithms, formatDuration, type CompiledLimit } from 'ratecontract';
import type { RateContractConfig, StoreConfig } from 'ratecontract/config';
import { plural } from './plural.js';
import { bySeverity, limitFindings, num, type Finding } from './audit-findings.js';

export type { Finding, FindingCode, Severity } from './audit-findings.js';
export { num } from './audit-findings.js';

const DAY_MS = 86_400_000;

/** One row of the contract table. */
export interface AuditRow {
  readonly name: string;
  readonly purpose: 'abuse' | 'shedding';
  readonly key: string;
  /** The client chooses the key's value: `body.*`, `header.*`, `query.*`. */
  readonly clientSupplied: boolean;
  readonly algorithm: string;
  /** The burst bound in words: "at most 20 + 1.67/s x t". */
  readonly bound: string;
  /**
   * The two-tier clause (`tier`) in words and numbers with k: what the
   * allotments can cost in admissions (never more than the bound, fewer by at
   * most the stated units), or what the pre-filter refuses. `null` without
   * `tier`.
   */
  readonly tier: string | null;
  readonly limit: number;
  readonly windowMs: number;
  /** B for the bucket algorithms; N for the others. */
  readonly burst: number;
  /** Cost units admitted per second at the sustained rate. */
  readonly ratePerSecond: number;
  /** The most one key can get in any interval of one window (concurrency: in flight). */
  readonly maxPerWindow: number;
  /** The most one key can get in any 24 hours; `null` for concurrency (it depends on how long requests hold). */
  readonly maxPerDay: number | null;
  /** N x (day / W): the sustained rate over a day, without the burst on top. `null` for concurrency. */
  readonly sustainedPerDay: number | null;
  readonly cost: number;
  readonly status: 429 | 503;
  readonly onError: 'open' | 'degraded' | 'closed';
  /** The fail mode in words and numbers with k. */
  readonly failMode: string;
  /** k used for the numbers: the configured count, or `null` when discovered at run time. */
  readonly replicas: number | null;
  /** Local admissions per W across k replicas while the store is down (`null` if open, or k unknown). */
  readonly outageMaxPerWindow: number | null;
  readonly failClosedAfterMs: number;
  readonly routes: readonly string[];
  /** Store name, or `(default)`. */
  readonly store: string;
  readonly storeType: 'memory' | 'redis';
  /** What fails together: `redis 127.0.0.1:6380/0`, or `process memory`. */
  readonly failureDomain: string;
  readonly shadow: boolean;
  readonly reason: string | null;
  readonly acknowledgeFailOpen: string | null;
  /** `keySlots`: the bound on this limit's keys in its store, or `null` when every key gets its own entry. */
  readonly keyspace: KeyspaceBound | null;
}

/** What `keySlots` bounds: keys, memory, and how often live keys share a slot. */
export interface KeyspaceBound {
  /** The most keys this limit can hold in its store: `keySlots`. */
  readonly maxKeys: number;
  /** Measured bytes of Redis memory per key for this algorithm and limit (REDIS_BYTES_PER_KEY, measured). */
  readonly bytesPerKey: number;
  /** maxKeys x bytesPerKey. */
  readonly maxBytes: number;
  /** Whether the slot hash is keyed (the Redis store's keySecret); unkeyed, anyone can compute which keys share a victim's slot. */
  readonly keyed: boolean;
  /** Expected share of live keys that share their slot with another live key, at a few live-key counts. */
  readonly collisions: ReadonlyArray<{ readonly liveKeys: number; readonly rate: number }>;
}

/**
 * Redis memory per key on Redis 7.0 (jemalloc), measured from used_memory by
 * test/redis/key-slots.test.ts, rounded up: the fixed-size states take 160
 * to 215 bytes, plus up to 24 bytes of the main hash table per key (it
 * doubles at powers of two, and holds both tables while it rehashes); a
 * sliding log adds about 17 bytes per entry held, a concurrency key about 37
 * per lease (both hold at most N).
 */
export const REDIS_BYTES_PER_KEY = Object.freeze({ base: 256, perLogEntry: 20, perLease: 40 });

/** Measured Redis bytes of one key of `l` at its largest (a full log or lease set). */
export function bytesPerKey(l: CompiledLimit): number {
  const { base, perLogEntry, perLease } = REDIS_BYTES_PER_KEY;
  if (l.algorithm === 'sliding-log') return base + perLogEntry * Math.min(l.params.limit, l.params.windowMs);
  if (l.algorithm === 'concurrency') return base + perLease * l.params.limit;
  // A sliding window of precision k holds k - 1 more doubles than the two counters (docs/algorithms.md: 282 bytes measured at k = 10).
  if (l.algorithm === 'sliding-window') return base + 8 * ((l.params.precision ?? 1) - 1);
  return base;
}

/**
 * The birthday bound: the chance that a given live key shares its slot with
 * at least one of the other `liveKeys - 1` live keys, among `slots` slots:
 * 1 - (1 - 1/slots)^(liveKeys - 1).
 */
export function collisionRate(slots: number, liveKeys: number): number {
  if (liveKeys <= 1) return 0;
  return -Math.expm1((liveKeys - 1) * Math.log1p(-1 / slots));
}

function keyspace(l: CompiledLimit, keyed: boolean): KeyspaceBound | null {
  const slots = l.keySlots;
  if (slots === undefined) return null;
  const per = bytesPerKey(l);
  const counts = [...new Set([Math.max(1, Math.round(slots / 100)), Math.max(1, Math.round(slots / 10)), slots])];
  return { maxKeys: slots, bytesPerKey: per, maxBytes: slots * per, keyed, collisions: counts.map((n) => ({ liveKeys: n, rate: collisionRate(slots, n) })) };
}

export interface AuditReport {
  readonly file: string;
  readonly replicas: number | 'discover';
  readonly rows: readonly AuditRow[];
  readonly findings: readonly Finding[];
}

const BUCKETS = new Set(['token-bucket', 'gcra', 'leaky-bucket']);

function clientSupplied(keySpec: string): boolean {
  return keySpec.startsWith('body.') || keySpec.startsWith('header.') || keySpec.startsWith('query.');
}

/** A rate in the largest unit that keeps it at or above 1: `1.67/s`, `12/h`. */
export function rate(perMs: number): string {
  for (const [unit, ms] of [['s', 1000], ['min', 60_000], ['h', 3_600_000]] as const) {
    if (perMs * ms >= 1) return `${num(perMs * ms)}/${unit}`;
  }
  return `${num(perMs * DAY_MS)}/day`;
}

function boundWords(l: CompiledLimit): string {
  const { limit: n, windowMs: w, burst: b } = l.params;
  const per = formatDuration(w);
  const seconds = `${num(w / 1000)} s`;
  switch (l.algorithm) {
    case 'fixed-window':
      return `${n} per aligned ${per} window; up to 2N = ${2 * n} in a ${seconds} interval that straddles a boundary`;
    case 'sliding-log':
      return `at most ${n} in any ${seconds} interval`;
    case 'sliding-window': {
      const k = l.params.precision ?? 1;
      if (k === 1) return `${n} per aligned ${per} window, under 2N = ${2 * n} in any ${seconds} interval (two-counter estimate)`;
      // Any k consecutive sub-windows admit at most N: an interval of W - W/k + 1 ms touches at most k of them.
      const exact = `${num((w - w / k + 1) / 1000)} s`;
      return `at most ${n} in any ${exact} interval, under 2N = ${2 * n} in any ${seconds} interval (precision ${k}: ${k} sub-windows of ${formatDuration(w / k)}, only the oldest estimated)`;
    }
    case 'concurrency':
      return `at most ${n} in flight (leases expire after ${per})`;
    default:
      return `at most ${b} + ${rate(n / w)} x t${l.algorithm === 'leaky-bucket' && l.params.queue ? ', output paced at ' + rate(n / w) : ''}`;
  }
}

/** The largest allotment `tier.maxAllotment` defaults to: capacity / 8k, at least 1 (as the limiter computes it). */
function maxAllotmentOf(l: CompiledLimit, k: number): number {
  const tier = l.tier;
  if (tier?.mode !== 'allotment') return 0;
  return tier.maxAllotment ?? Math.max(1, Math.floor(algorithms[l.algorithm].capacity(l.params) / (8 * k)));
}

function tierWords(l: CompiledLimit, k: number | null): string | null {
  const tier = l.tier;
  if (tier === undefined) return null;
  if (tier.mode === 'pre-filter') {
    return `pre-filter: a process-local copy at N = ${l.params.limit} refuses a single-source flood before any store call; it never refuses what the shared limit would admit`;
  }
  const kk = k ?? 1;
  const allotment = maxAllotmentOf(l, kk);
  const kText = k === null ? 'k (discovered)' : `k = ${k}`;
  const life = formatDuration(tier.allotmentLifetimeMs);
  if (l.algorithm === 'token-bucket' || l.algorithm === 'gcra') {
    const shared = l.params.burst - kk * allotment;
    return `allotment: never above the bound; the shared bucket holds burst - k x maxAllotment = ${shared} (${kText}, maxAllotment ${allotment}) and allots the rest, so bursts may fall short of ${l.params.burst} by up to 2 x k x maxAllotment = ${2 * kk * allotment} (the reserve and unspent allotments, for up to ${life})`;
  }
  const est = l.algorithm === 'sliding-window' ? '; unspent units also weigh in the next window’s estimate' : '';
  return `allotment: never above the bound; a window may admit up to k x maxAllotment = ${kk * allotment} fewer (${kText}, maxAllotment ${allotment}: unspent allotments, which end with their window or after ${life})${est}`;
}

function storeOf(config: RateContractConfig, l: CompiledLimit): { name: string; store: StoreConfig } {
  const name = l.storeName ?? (config.stores.default !== undefined ? 'default' : '(default)');
  return { name, store: config.stores[name] ?? { type: 'memory' } };
}

/** What fails together: one Redis server (host, port, database), or this process's memory. */
export function failureDomain(s: StoreConfig): string {
  if (s.type === 'memory') return 'process memory';
  try {
    const u = new URL(s.url);
    const db = u.pathname.replace(/^\//, '') || '0';
    return `redis ${u.hostname}:${u.port || '6379'}/${db}${s.cluster === true ? ' (cluster)' : ''}`;
  } catch {
    return `redis ${s.url}`;
  }
}

function failModeWords(l: CompiledLimit, k: number | null, storeType: 'memory' | 'redis'): { words: string; outage: number | null } {
  const n = l.params.limit;
  const per = l.algorithm === 'concurrency' ? 'in flight' : `per ${formatDuration(l.params.windowMs)}`;
  const memory = storeType === 'memory' ? ' [memory store: never fails]' : '';
  if (l.onError === 'open') return { words: `open: every request is admitted while the store is down${memory}`, outage: null };
  if (l.onError === 'degraded') {
    if (k === null) {
      return { words: `degraded: ceil(N/k) = ceil(${n}/k) per replica ${per} (k discovered at run time); never rejects for lack of a store${memory}`, outage: null };
    }
    const each = Math.ceil(n / k);
    return { words: `degraded: ceil(N/k) = ${each} per replica ${per}, ${k * each} across k = ${k}; never rejects for lack of a store${memory}`, outage: k * each };
  }
  const after = l.failClosedAfterMs === 0 ? '503 at once' : `then 503 after ${num(l.failClosedAfterMs / 1000)} s`;
  if (k === null) {
    return { words: `closed: k x N = k x ${n} attempts ${per} while the store is down (k discovered at run time), ${after}${memory}`, outage: null };
  }
  return { words: `closed: k x N = ${plural(k * n, 'attempt')} ${per} while the store is down (k = ${k}), ${after}${memory}`, outage: k * n };
}

function row(config: RateContractConfig, l: CompiledLimit): AuditRow {
  const algo = algorithms[l.algorithm];
  const k = config.replicas === 'discover' ? null : config.replicas;
  const { name: store, store: s } = storeOf(config, l);
  const fm = failModeWords(l, k, s.type);
  const concurrency = l.algorithm === 'concurrency';
  return {
    name: l.name,
    purpose: l.purpose,
    key: l.keySpec,
    clientSupplied: clientSupplied(l.keySpec),
    algorithm: l.algorithm,
    bound: boundWords(l),
    tier: tierWords(l, k),
    limit: l.params.limit,
    windowMs: l.params.windowMs,
    burst: l.params.burst,
    ratePerSecond: (l.params.limit * 1000) / l.params.windowMs,
    maxPerWindow: algo.bound(l.params, l.params.windowMs),
    maxPerDay: concurrency ? null : algo.bound(l.params, DAY_MS),
    sustainedPerDay: concurrency ? null : Math.floor((l.params.limit * DAY_MS) / l.params.windowMs),
    cost: l.cost,
    status: l.status,
    onError: l.onError,
    failMode: fm.words,
    replicas: k,
    outageMaxPerWindow: fm.outage,
    failClosedAfterMs: l.failClosedAfterMs,
    routes: config.routes.filter((r) => r.limits.includes(l.name)).map((r) => r.match),
    store,
    storeType: s.type,
    failureDomain: failureDomain(s),
    shadow: l.shadow,
    reason: l.reason ?? null,
    acknowledgeFailOpen: l.acknowledgeFailOpen ?? null,
    keyspace: keyspace(l, s.type === 'memory' || s.keySecretEnv !== undefined),
  };
}

/** Whether `strict` (enforcing, earlier or not) admits only what `loose` would admit anyway, on the same key, so `loose` can never trip. */
function alwaysStricter(strict: CompiledLimit, loose: CompiledLimit): boolean {
  if (strict.shadow || loose.shadow || loose.countRejected || strict.cost !== loose.cost) return false;
  if (strict.keySpec !== loose.keySpec && strict.keySpec !== 'global') return false;
  if (strict.algorithm === 'concurrency' || loose.algorithm === 'concurrency') return false;
  const a = strict.params;
  const b = loose.params;
  if (loose.algorithm === 'sliding-log') {
    // A sliding log rejects only when some interval of its window would exceed N.
    return algorithms[strict.algorithm].bound(a, b.windowMs) <= b.limit;
  }
  if (BUCKETS.has(loose.algorithm) && !(loose.algorithm === 'leaky-bucket' && b.queue) && BUCKETS.has(strict.algorithm)) {
    return a.burst <= b.burst && a.limit * b.windowMs <= b.limit * a.windowMs;
  }
  if (loose.algorithm === 'fixed-window' && strict.algorithm === 'fixed-window') {
    return b.windowMs % a.windowMs === 0 && a.limit * (b.windowMs / a.windowMs) <= b.limit;
  }
  return false;
}

function findings(config: RateContractConfig, rows: readonly AuditRow[]): Finding[] {
  const out: Finding[] = [];
  const limits = config.compiled;
  const at = (l: CompiledLimit): string => `limits[${limits.indexOf(l)}] ${l.name}`;
  const identified = config.http.identify !== undefined;
  const rowOf = new Map(rows.map((r) => [r.name, r]));
  for (const l of limits) {
    const r = rowOf.get(l.name) as AuditRow;
    // The limit on its own (fail-open abuse, reason, shadow, fixed window), as audit --rls reports a rule; then its place in the contract.
    out.push(...limitFindings(l, at(l)));
    if (r.routes.length === 0) out.push({ code: 'RC_AUDIT_UNUSED_LIMIT', severity: 'warn', subject: at(l), message: 'no route uses this limit: it enforces nothing' });
    const tenantish = /tenant|account|user|org|customer|client|api-?key/i.test(`${l.name} ${l.keySpec}`);
    if (l.keySpec.startsWith('header.') && (l.purpose === 'abuse' || tenantish)) {
      out.push({
        code: 'RC_AUDIT_CLIENT_CHOSEN_KEY',
        severity: identified ? 'warn' : 'error',
        subject: at(l),
        message: `keyed on ${l.keySpec}, a value the client chooses${identified ? '' : ', and the contract has no authenticated identity (http.identify)'}: an attacker sends a new value per request and this limit never trips; key it on principal`,
      });
    }
    if (r.clientSupplied && r.storeType === 'redis' && r.routes.length > 0 && r.keyspace === null) {
      out.push({
        code: 'RC_AUDIT_UNBOUNDED_KEYSPACE',
        severity: 'warn',
        subject: at(l),
        message: `keyed on ${l.keySpec} in Redis store "${r.store}": a client can invent keys and allocate state without bound; set keySlots to bound the Redis keyspace (a memory store is bounded by maxKeys)`,
      });
    }
    if (r.storeType === 'memory' && (config.replicas === 'discover' || config.replicas > 1)) {
      out.push({
        code: 'RC_AUDIT_MEMORY_STORE_REPLICAS',
        severity: 'warn',
        subject: at(l),
        message: `on a memory store with replicas ${String(config.replicas)}: each replica counts alone, so the fleet admits up to k x ${r.maxPerWindow} per ${formatDuration(l.params.windowMs)}; use a Redis store`,
      });
    }
  }
  // Failure domains: abuse and shedding limits that fail together.
  const domains = new Map<string, { abuse: Set<string>; shedding: Set<string> }>();
  for (const r of rows) {
    if (r.storeType === 'memory') continue; // a memory store does not fail
    const d = domains.get(r.failureDomain) ?? { abuse: new Set(), shedding: new Set() };
    d[r.purpose].add(r.name);
    domains.set(r.failureDomain, d);
  }
  for (const [domain, d] of domains) {
    if (d.abuse.size > 0 && d.shedding.size > 0) {
      out.push({
        code: 'RC_AUDIT_SHARED_FAILURE_DOMAIN',
        severity: 'warn',
        subject: '(contract)',
        message: `abuse limits (${[...d.abuse].join(', ')}) and shedding limits (${[...d.shedding].join(', ')}) share one failure domain, ${domain}: load that takes it down also switches the security controls to their fail mode; give abuse limits their own store`,
      });
    }
  }
  const byName = new Map(limits.map((l) => [l.name, l]));
  config.routes.forEach((route, i) => {
    const subject = `routes[${i}] ${route.match}`;
    const chain = route.limits.map((n) => byName.get(n) as CompiledLimit);
    if (chain.length === 0) return;
    if (chain.every((l) => l.keySpec === 'global')) {
      out.push({ code: 'RC_AUDIT_GLOBAL_ONLY', severity: 'error', subject, message: 'the chain is only a global limit: one client can spend everyone\'s budget; a global limit is the last layer, never the only one' });
    }
    const enforcing = chain.filter((l) => !l.shadow);
    if (enforcing.length === 0) {
      out.push({ code: 'RC_AUDIT_ROUTE_UNCOVERED', severity: 'warn', subject, message: 'every limit of this route is shadow: nothing is enforced; mark it limits: [] if that is meant' });
    } else if (enforcing.every((l) => l.keySpec !== 'ip' && l.keySpec !== 'global')) {
      out.push({
        code: 'RC_AUDIT_ROUTE_UNCOVERED',
        severity: 'warn',
        subject,
        message: `every enforcing limit keys on a value a request can lack (${enforcing.map((l) => l.keySpec).join(', ')}): a request without it is not limited at all; add a per-IP limit`,
      });
    }
    for (const loose of chain) {
      const strict = chain.find((s) => s !== loose && alwaysStricter(s, loose));
      if (strict !== undefined) {
        out.push({
          code: 'RC_AUDIT_NEVER_TRIPS',
          severity: 'warn',
          subject,
          message: `${loose.name} can never trip: ${strict.name} (${strict.keySpec === loose.keySpec ? 'same key' : 'global'}) is always stricter, and the chain consumes only what every limit admits`,
        });
      }
    }
  });
  if (config.routes.length > 0 && !config.routes.some((r) => r.pattern.method === '*' && r.pattern.segments.length === 1 && r.pattern.segments[0]?.kind === 'wildcard')) {
    out.push({ code: 'RC_AUDIT_NO_CATCH_ALL', severity: 'info', subject: '(contract)', message: 'no \'* /*\' route: a request that matches no route is not limited' });
  }
  return bySeverity(out);
}

/** The contract table and findings of a validated config. */
export function auditContract(config: RateContractConfig): AuditReport {
  const rows = config.compiled.map((l) => row(config, l));
  return { file: config.file, replicas: config.replicas, rows, findings: findings(config, rows) };
}
