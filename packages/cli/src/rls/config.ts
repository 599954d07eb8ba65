import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { LineCounter, parseDocument, isNode, type Document } from 'yaml';
import { algorithms, ConfigError, type AlgorithmName, type CompiledLimit, type LimitDefinition, type Purpose } from 'ratecontract';
import { compileLimit, cyclicAlias, refuseUnknown } from 'ratecontract/internal';
import { ConfigFileError, parsePath } from 'ratecontract/config';

/** The units of `rate_limit.unit` (matched case-insensitively, as the reference does). */
export const RLS_UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'year'] as const;
export type RlsUnit = (typeof RLS_UNITS)[number];

/** Window of each unit in ms: a month is 30 days and a year 365, as in envoyproxy/ratelimit. */
export const UNIT_MS: Readonly<Record<RlsUnit, number>> = {
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
  month: 30 * 86_400_000,
  year: 365 * 86_400_000,
};

/** The wire enum value of each unit (`RateLimitResponse.RateLimit.Unit`). */
export const UNIT_WIRE: Readonly<Record<RlsUnit, string>> = {
  second: 'SECOND',
  minute: 'MINUTE',
  hour: 'HOUR',
  day: 'DAY',
  week: 'WEEK',
  month: 'MONTH',
  year: 'YEAR',
};

/** Algorithms a rule may name in `algorithm` (concurrency needs a release the protocol has no call for). */
export const RLS_ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra'];

/** What a rule's limiter is keyed by: the counter key of the request descriptor (`descriptorKey`). */
export interface RlsKeyContext {
  readonly k: string;
}

/** The key of every rule's limit definition: the descriptor's counter key, computed by the engine. */
export const descriptorKeyOf = (ctx: RlsKeyContext): string => ctx.k;

/**
 * The drop-in default: the purpose a rule gets when its file states none.
 * The reference's rules are capacity limits with no purpose, so a file
 * written for it loads unchanged as `shedding` (and the library's compiler
 * then gives it `shedding`'s fail mode, `degraded`). `audit --rls` reports
 * every rule that got it (`RC_AUDIT_DEFAULT_PURPOSE`).
 */
export const DROP_IN_PURPOSE: Purpose = 'shedding';

/**
 * One `rate_limit` of a config file, translated: the reference's fields the
 * descriptor matching reads, and the library limit definition the rule's
 * clauses become, compiled by the library's compiler.
 */
export interface RlsRule {
  /** The library limit name of this rule: `[a-z0-9_-]+`, at most 64, stable for the same domain and descriptor path. */
  readonly id: string;
  readonly domain: string;
  /** `domain.key_value.key` as the reference writes it. */
  readonly path: string;
  /** The file it came from. */
  readonly file: string;
  /** Where it sits in its file (`descriptors[0].descriptors[1].rate_limit`). */
  readonly at: string;
  readonly unit: RlsUnit | undefined;
  readonly requestsPerUnit: number;
  readonly unlimited: boolean;
  /** `rate_limit.name` (what `replaces` refers to). */
  readonly name: string | undefined;
  readonly replaces: readonly string[];
  /** `shadow_mode` of the descriptor. */
  readonly shadow: boolean;
  readonly detailedMetric: boolean;
  /** Extension: `local` keeps the rule's state in this process even when the service runs on Redis. */
  readonly store: 'default' | 'local';
  /**
   * The library limit definition of the rule (`undefined` for `unlimited`,
   * which never counts): N is `requests_per_unit`, the window the unit, the
   * algorithm `fixed-window` unless stated, the purpose `DROP_IN_PURPOSE`
   * unless stated, and the extensions as written. A blocked rule
   * (`requests_per_unit: 0`) never reaches a store; its definition carries N
   * = 1, so that its clauses are compiled too and a per-request `limit`
   * override has them to keep.
   */
  readonly definition: LimitDefinition<RlsKeyContext> | undefined;
  /** `definition` compiled by the library's `compileLimit`: the fail mode, algorithm, burst and grace as they apply. */
  readonly compiled: CompiledLimit | undefined;
  /** Whether the file states `purpose`; `false`: the translation gave it `DROP_IN_PURPOSE`. */
  readonly purposeStated: boolean;
  /** Extension: what the number defends (an unlimited rule may say why it is); also in `definition`. */
  readonly reason: string | undefined;
}

/** One level of a domain's descriptor tree. */
export interface RlsNode {
  /** Children by `key_value` or `key` (the reference's composite keys). */
  readonly children: Map<string, RlsNode>;
  /** Children whose value holds `*`, in file order: the composite key and its parts split on `*`. */
  readonly wildcards: Array<{ readonly key: string; readonly parts: readonly string[] }>;
  readonly rule: RlsRule | undefined;
  /** `share_threshold`: every value this wildcard matches shares one counter. */
  readonly sharePattern: string | undefined;
}

/** A loaded set of rate limit service config files. */
export interface RlsConfig {
  /** The files read, in load order. */
  readonly files: readonly string[];
  readonly domains: ReadonlyMap<string, RlsNode>;
  /** Every rule, in file order. */
  readonly rules: readonly RlsRule[];
}

const ROOT_KEYS = ['domain', 'descriptors'];
const DESCRIPTOR_KEYS = ['key', 'value', 'rate_limit', 'descriptors', 'shadow_mode', 'detailed_metric', 'value_to_metric', 'share_threshold', 'metadata', 'quota_mode'];
const RATE_LIMIT_KEYS = ['unit', 'requests_per_unit', 'unlimited', 'name', 'replaces', 'algorithm', 'burst', 'purpose', 'onError', 'acknowledgeFailOpen', 'failClosedAfter', 'reason', 'store'];

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function bool(v: unknown, path: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new ConfigError('RC_INVALID_OPTION', path, `must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

function str(v: unknown, path: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v !== 'string') throw new ConfigError('RC_INVALID_OPTION', path, `must be a string, got ${JSON.stringify(v)}`);
  return v;
}

function oneOf<T extends string>(v: unknown, allowed: readonly T[], path: string): T | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) throw new ConfigError('RC_INVALID_OPTION', path, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`);
  return v as T;
}

const NAME_CHARS = /[^a-z0-9_-]+/g;

/** A library limit name for a descriptor path: readable when it fits, with a digest when it does not or when taken. */
export function ruleId(path: string, taken: ReadonlySet<string>): string {
  const plain = path.toLowerCase().replace(NAME_CHARS, '_').replace(/^_+|_+$/g, '') || 'rule';
  if (plain.length <= 64 && !taken.has(plain)) return plain;
  const digest = createHash('sha256').update(path).digest('hex').slice(0, 10);
  return `${plain.slice(0, 53)}-${digest}`;
}

interface Loading {
  readonly file: string;
  readonly rules: RlsRule[];
  readonly ids: Set<string>;
}

/** The library option a compiler error names, as the file writes it (the other clauses keep their names). */
const FILE_NAMES: Readonly<Record<string, string>> = { limit: 'requests_per_unit', window: 'unit' };
/** The clauses of a counting rule; `unlimited: true` takes none of them (it never counts, so none could apply). */
const LIMIT_CLAUSES = ['algorithm', 'burst', 'purpose', 'onError', 'acknowledgeFailOpen', 'failClosedAfter', 'store'];
const NO_STORES: ReadonlySet<string> = new Set();

/** `null` (YAML's empty value) as absent, as the reference reads its fields. */
function given(v: unknown): unknown {
  return v === null ? undefined : v;
}

/**
 * Compiles a rule's definition with the library's compiler, at the rule's
 * path in its file: an error names `descriptors[0].rate_limit.burst`, and
 * `requests_per_unit` / `unit` where the library says `limit` / `window`.
 */
function compileRule(def: LimitDefinition<RlsKeyContext>, at: string): CompiledLimit {
  try {
    return compileLimit(def as LimitDefinition, at, NO_STORES);
  } catch (error) {
    if (!(error instanceof ConfigError) || !error.option.startsWith(`${at}.`)) throw error;
    const [head = '', ...rest] = error.option.slice(at.length + 1).split('.');
    const option = [`${at}.${FILE_NAMES[head] ?? head}`, ...rest].join('.');
    throw new ConfigError(error.code, option, error.message.slice(error.option.length + 2), { cause: error });
  }
}

/**
 * Translates a counting rule into the library's limit definition. The steps
 * beyond renaming: the reference's fixed window when no algorithm is stated,
 * and `DROP_IN_PURPOSE` when no purpose is.
 */
function definitionOf(raw: Record<string, unknown>, at: string, id: string, unit: RlsUnit, requestsPerUnit: number, shadow: boolean): LimitDefinition<RlsKeyContext> {
  const algorithm = given(raw.algorithm);
  if (typeof algorithm === 'string' && Object.hasOwn(algorithms, algorithm) && !RLS_ALGORITHMS.includes(algorithm as AlgorithmName)) {
    throw new ConfigError('RC_INVALID_OPTION', `${at}.algorithm`, `must be one of ${RLS_ALGORITHMS.join(', ')}, got ${JSON.stringify(algorithm)} (the protocol has no call to release a concurrency lease)`);
  }
  const purpose = given(raw.purpose);
  const clauses: Record<string, unknown> = {
    name: id,
    purpose: purpose ?? DROP_IN_PURPOSE,
    onError: given(raw.onError),
    acknowledgeFailOpen: str(raw.acknowledgeFailOpen, `${at}.acknowledgeFailOpen`),
    algorithm: algorithm ?? 'fixed-window',
    limit: requestsPerUnit === 0 ? 1 : requestsPerUnit,
    window: UNIT_MS[unit],
    burst: given(raw.burst),
    key: descriptorKeyOf,
    failClosedAfter: given(raw.failClosedAfter),
    reason: str(raw.reason, `${at}.reason`),
    shadow,
  };
  for (const k of Object.keys(clauses)) if (clauses[k] === undefined) delete clauses[k];
  return clauses as unknown as LimitDefinition<RlsKeyContext>;
}

function loadRateLimit(raw: unknown, at: string, domain: string, path: string, shadow: boolean, detailedMetric: boolean, loading: Loading): RlsRule {
  if (!isRecord(raw)) throw new ConfigError('RC_INVALID_OPTION', at, 'must be a map');
  refuseUnknown(raw, RATE_LIMIT_KEYS, at);
  const unlimited = bool(raw.unlimited, `${at}.unlimited`);
  const unitRaw = str(raw.unit, `${at}.unit`);
  const unit = unitRaw === undefined ? undefined : (unitRaw.toLowerCase() as RlsUnit);
  const validUnit = unit !== undefined && (RLS_UNITS as readonly string[]).includes(unit);
  if (unlimited && validUnit) throw new ConfigError('RC_INVALID_OPTION', `${at}.unit`, 'should not be given with unlimited: true');
  if (!unlimited && !validUnit) throw new ConfigError('RC_INVALID_OPTION', `${at}.unit`, `invalid rate limit unit ${JSON.stringify(unitRaw ?? '')} (one of ${RLS_UNITS.join(', ')})`);
  if (unlimited) {
    const clause = LIMIT_CLAUSES.find((k) => given(raw[k]) !== undefined);
    if (clause !== undefined) throw new ConfigError('RC_INVALID_OPTION', `${at}.${clause}`, 'does not apply with unlimited: true (the rule never counts)');
  }
  const rpu = raw.requests_per_unit ?? 0;
  if (typeof rpu !== 'number' || !Number.isInteger(rpu) || rpu < 0 || rpu > 0xffff_ffff) {
    throw new ConfigError('RC_INVALID_LIMIT', `${at}.requests_per_unit`, `must be an integer from 0 to 4294967295, got ${JSON.stringify(rpu)}`);
  }
  const name = str(raw.name, `${at}.name`);
  const replaces: string[] = [];
  if (raw.replaces !== undefined && raw.replaces !== null) {
    if (!Array.isArray(raw.replaces)) throw new ConfigError('RC_INVALID_OPTION', `${at}.replaces`, 'must be a list of { name }');
    raw.replaces.forEach((r: unknown, i) => {
      const rp = `${at}.replaces[${i}]`;
      if (!isRecord(r)) throw new ConfigError('RC_INVALID_OPTION', rp, 'must be a map { name }');
      refuseUnknown(r, ['name'], rp);
      const n = str(r.name, `${rp}.name`);
      if (n === undefined || n === '') throw new ConfigError('RC_INVALID_OPTION', `${rp}.name`, 'should not be empty');
      if (n === name) throw new ConfigError('RC_INVALID_OPTION', `${rp}.name`, 'should not name its own rule');
      replaces.push(n);
    });
  }
  const store = oneOf<'default' | 'local'>(raw.store, ['default', 'local'], `${at}.store`) ?? 'default';
  const reason = str(raw.reason, `${at}.reason`);
  const id = ruleId(path, loading.ids);
  const definition = unlimited || unit === undefined ? undefined : definitionOf(raw, at, id, unit, rpu, shadow);
  const compiled = definition === undefined ? undefined : compileRule(definition, at);
  loading.ids.add(id);
  const rule: RlsRule = {
    id,
    domain,
    path,
    file: loading.file,
    at,
    unit: unlimited ? undefined : unit,
    requestsPerUnit: rpu,
    unlimited,
    name: name === '' ? undefined : name,
    replaces,
    shadow,
    detailedMetric,
    store,
    definition,
    compiled,
    purposeStated: given(raw.purpose) !== undefined,
    reason,
  };
  loading.rules.push(rule);
  return rule;
}

function newNode(rule: RlsRule | undefined, sharePattern: string | undefined): RlsNode {
  return { children: new Map(), wildcards: [], rule, sharePattern };
}

function loadDescriptors(parent: RlsNode, raw: unknown, at: string, domain: string, parentPath: string, loading: Loading): void {
  if (raw === undefined || raw === null) return;
  if (!Array.isArray(raw)) throw new ConfigError('RC_INVALID_OPTION', at, 'must be a list of descriptors');
  raw.forEach((d: unknown, i) => {
    const dp = `${at}[${i}]`;
    if (!isRecord(d)) throw new ConfigError('RC_INVALID_OPTION', dp, 'must be a map (key, value, rate_limit, descriptors)');
    refuseUnknown(d, DESCRIPTOR_KEYS, dp);
    if (d.quota_mode !== undefined && d.quota_mode !== false) throw new ConfigError('RC_INVALID_OPTION', `${dp}.quota_mode`, 'is not supported by ratecontract rls');
    const key = str(d.key, `${dp}.key`);
    if (key === undefined || key === '') throw new ConfigError('RC_INVALID_KEY', `${dp}.key`, 'descriptor has an empty key');
    const value = str(d.value, `${dp}.value`) ?? '';
    const composite = value === '' ? key : `${key}_${value}`;
    const path = `${parentPath}.${composite}`;
    if (parent.children.has(composite)) throw new ConfigError('RC_DUPLICATE_NAME', dp, `duplicate descriptor composite key ${JSON.stringify(path)}`);
    const share = bool(d.share_threshold, `${dp}.share_threshold`);
    if (share && !composite.includes('*')) throw new ConfigError('RC_INVALID_OPTION', `${dp}.share_threshold`, `only applies to a wildcard value (with '*'), found ${JSON.stringify(composite)}`);
    bool(d.value_to_metric, `${dp}.value_to_metric`);
    if (d.metadata !== undefined && d.metadata !== null && !isRecord(d.metadata)) throw new ConfigError('RC_INVALID_OPTION', `${dp}.metadata`, 'must be a map');
    const shadow = bool(d.shadow_mode, `${dp}.shadow_mode`);
    const detailed = bool(d.detailed_metric, `${dp}.detailed_metric`);
    const rule = d.rate_limit === undefined || d.rate_limit === null ? undefined : loadRateLimit(d.rate_limit, `${dp}.rate_limit`, domain, path, shadow, detailed, loading);
    const node = newNode(rule, share ? value : undefined);
    if (composite.includes('*')) parent.wildcards.push({ key: composite, parts: composite.split('*') });
    parent.children.set(composite, node);
    loadDescriptors(node, d.descriptors, `${dp}.descriptors`, domain, path, loading);
  });
}

function position(doc: Document, lines: LineCounter, option: string): { line: number; column: number } | undefined {
  let segments: Array<string | number>;
  try {
    segments = parsePath(option);
  } catch {
    return undefined;
  }
  for (let n = segments.length; n > 0; n--) {
    const node = doc.getIn(segments.slice(0, n), true);
    if (isNode(node) && node.range !== undefined && node.range !== null) {
      const p = lines.linePos(node.range[0]);
      return { line: p.line, column: p.col };
    }
  }
  return undefined;
}

/** Parses one reference-format YAML file into `domains` (refusing a domain already there). */
export function parseRlsFile(text: string, file: string, domains: Map<string, RlsNode>, rules: RlsRule[], ids: Set<string>): void {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true, merge: false, version: '1.2' });
  const problem = doc.errors[0];
  if (problem !== undefined) {
    const at = problem.linePos?.[0];
    const detail = problem.message.split('\n')[0] ?? 'invalid YAML';
    throw new ConfigFileError('RC_CONFIG_SYNTAX', file, '', detail, at === undefined ? undefined : { line: at.line, column: at.col });
  }
  const cycle = cyclicAlias(doc, lines);
  if (cycle !== undefined) throw new ConfigFileError('RC_CONFIG_SYNTAX', file, '', `line ${cycle.line}, column ${cycle.column}: an alias refers to a collection that contains it, which would make the data endless`, cycle);
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // yaml's own bound on aliases (a "billion laughs" document): a syntax error of the file, as in a contract file.
    throw new ConfigFileError('RC_CONFIG_SYNTAX', file, '', error instanceof Error ? error.message : String(error), undefined, { cause: error });
  }
  const loading: Loading = { file, rules: [], ids };
  try {
    if (!isRecord(data)) throw new ConfigError('RC_INVALID_OPTION', 'domain', 'the file must be a map with domain and descriptors');
    refuseUnknown(data, ROOT_KEYS, '');
    const domain = str(data.domain, 'domain');
    if (domain === undefined || domain === '') throw new ConfigError('RC_INVALID_OPTION', 'domain', 'config file cannot have an empty domain');
    if (domains.has(domain)) throw new ConfigError('RC_DUPLICATE_NAME', 'domain', `duplicate domain ${JSON.stringify(domain)} (another file defines it)`);
    const root = newNode(undefined, undefined);
    loadDescriptors(root, data.descriptors, 'descriptors', domain, domain, loading);
    domains.set(domain, root);
    rules.push(...loading.rules);
  } catch (error) {
    for (const r of loading.rules) ids.delete(r.id);
    if (error instanceof ConfigFileError) throw error;
    if (error instanceof ConfigError) {
      const detail = error.message.startsWith(`${error.option}: `) ? error.message.slice(error.option.length + 2) : error.message;
      throw new ConfigFileError(error.code, file, error.option, detail, position(doc, lines, error.option), { cause: error });
    }
    throw error;
  }
}

/** Parses config texts (name, text) in order into one config. Throws `ConfigFileError` naming the file and the path in it. */
export function parseRlsConfig(files: ReadonlyArray<{ readonly file: string; readonly text: string }>): RlsConfig {
  const domains = new Map<string, RlsNode>();
  const rules: RlsRule[] = [];
  const ids = new Set<string>();
  for (const f of files) parseRlsFile(f.text, f.file, domains, rules, ids);
  return { files: files.map((f) => f.file), domains, rules };
}

/** Whether a directory entry is a config file: `*.yaml` / `*.yml`, not hidden (skips Kubernetes' `..data` links and editor swap files). */
export function isConfigFileName(name: string): boolean {
  return !name.startsWith('.') && /\.ya?ml$/i.test(name);
}

/** Reads a file, or every `*.yaml` / `*.yml` of a directory (sorted by name), as the reference's runtime directory. */
export async function loadRlsConfig(path: string): Promise<RlsConfig> {
  let files: string[];
  try {
    const s = await stat(path);
    files = s.isDirectory() ? (await readdir(path)).filter(isConfigFileName).sort().map((n) => join(path, n)) : [path];
  } catch (error) {
    throw new ConfigFileError('RC_CONFIG_UNREADABLE', path, '', `cannot read (${error instanceof Error ? error.message : String(error)})`, undefined, { cause: error });
  }
  const texts: Array<{ file: string; text: string }> = [];
  for (const file of files) {
    try {
      texts.push({ file, text: await readFile(file, 'utf8') });
    } catch (error) {
      throw new ConfigFileError('RC_CONFIG_UNREADABLE', file, '', `cannot read (${error instanceof Error ? error.message : String(error)})`, undefined, { cause: error });
    }
  }
  return parseRlsConfig(texts);
}
