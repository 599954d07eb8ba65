import { isAbsolute, resolve } from 'node:path';
import { LIMIT_OPTIONS, NAME_PATTERN, compileLimits } from '../core/compile.js';
import { parseDuration } from '../core/duration.js';
import { ConfigError, type ErrorCode } from '../core/errors.js';
import { didYouMean } from '../core/suggest.js';
import type { CompiledLimit, LimitDefinition } from '../core/types.js';
import { resolveIpOptions, type IpOptions } from '../http/client-ip.js';
import { resolveResponseOptions, type ResponseOptions } from '../http/response-options.js';
import { resolveMemoryStoreOptions } from '../stores/memory/memory-store.js';
import { parseRoutePattern } from './route-pattern.js';
import type { HttpConfig, IdentifyConfig, JwtConfig, RateContractConfig, RouteConfig, StoreConfig } from './types.js';

/** Where a value sits in the file: `['limits', 2, 'window']` is `limits[2].window`. */
export type ConfigPath = readonly (string | number)[];

/** Formats a path the way messages print it: `limits[2].window`, `stores.shared.url`. */
export function formatPath(path: ConfigPath): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? p : `.${p}`;
  return out === '' ? '(top level)' : out;
}

/** The inverse of `formatPath`, for option names that the library's validators report. */
export function parsePath(option: string): (string | number)[] {
  if (option === '(top level)') return [];
  const out: (string | number)[] = [];
  for (const m of option.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : (m[1] as string));
  return out;
}

function fail(code: ErrorCode, path: ConfigPath, message: string): never {
  throw new ConfigError(code, formatPath(path), message);
}

function describe(v: unknown): string {
  if (v === null) return 'nothing (null)';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return typeof v;
}

type Obj = Readonly<Record<string, unknown>>;

function mapping(v: unknown, path: ConfigPath, what: string): Obj {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail('RC_INVALID_OPTION', path, `must be a mapping (${what}), got ${describe(v)}`);
  return v as Obj;
}

function list(v: unknown, path: ConfigPath, what: string): readonly unknown[] {
  if (!Array.isArray(v)) fail('RC_INVALID_OPTION', path, `must be a list (${what}), got ${describe(v)}`);
  return v as readonly unknown[];
}

function onlyKeys(o: Obj, path: ConfigPath, allowed: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) {
      const hint = didYouMean(k, allowed);
      fail('RC_INVALID_OPTION', [...path, k], `unknown option ${JSON.stringify(k)}${hint === '' ? `; expected one of ${allowed.join(', ')}` : hint}`);
    }
  }
}

function string(v: unknown, path: ConfigPath): string {
  if (typeof v !== 'string' || v.trim() === '') fail('RC_INVALID_OPTION', path, `must be a non-empty string, got ${describe(v)}`);
  return v;
}

function positiveInt(v: unknown, path: ConfigPath): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) fail('RC_INVALID_OPTION', path, `must be a positive integer, got ${describe(v)}`);
  return v;
}

function boolean(v: unknown, path: ConfigPath): boolean {
  if (typeof v !== 'boolean') fail('RC_INVALID_OPTION', path, `must be true or false, got ${describe(v)}`);
  return v;
}

function oneOf<T extends string>(v: unknown, path: ConfigPath, values: readonly T[]): T {
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
    fail('RC_INVALID_OPTION', path, `must be ${values.map((x) => JSON.stringify(x)).join(' or ')}, got ${describe(v)}${typeof v === 'string' ? didYouMean(v, values) : ''}`);
  }
  return v as T;
}

/** Runs a library validator; its `ConfigError` is re-pointed at `prefix` + the option it names. */
function rebase<T>(prefix: ConfigPath, run: () => T, rename: (option: string) => string = (o) => o): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(error.code, formatPath([...prefix, ...parsePath(rename(error.option))]), error.message.slice(error.option.length + 2), { cause: error });
    throw error;
  }
}

/** Refuses null anywhere: an empty value in YAML (`onError:`) is almost always a clause left unfinished. */
function noNulls(v: unknown, path: (string | number)[]): void {
  if (v === null) fail('RC_INVALID_OPTION', path, 'is empty (null): give it a value or remove it');
  if (Array.isArray(v)) v.forEach((x, i) => noNulls(x, [...path, i]));
  else if (typeof v === 'object') for (const [k, x] of Object.entries(v as Obj)) noNulls(x, [...path, k]);
}

const TOP = ['$schema', 'stores', 'replicas', 'limits', 'routes', 'http'] as const;
const MEMORY_KEYS = ['type', 'maxKeys', 'overflowSlots'] as const;
const REDIS_KEYS = ['type', 'url', 'deadline', 'prefix', 'timeMode', 'cluster', 'breaker', 'keySecretEnv'] as const;
const HTTP_KEYS = [
  'trustProxy', 'forwardedHeader', 'ipv6Prefix', 'ipv4Prefix', 'advertise', 'fields', 'legacyHeaders', 'advertiseCapacity', 'windowCap', 'maxBodyBytes', 'identify',
] as const;
const JWT_KEYS = ['secret', 'publicKeyFile', 'jwksFile', 'claim', 'issuer', 'audience', 'algorithms'] as const;
const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;

function store(v: unknown, path: ConfigPath): StoreConfig {
  const o = mapping(v, path, 'a store: { type: memory } or { type: redis, url: ... }');
  if (o.type === undefined) fail('RC_INVALID_OPTION', [...path, 'type'], "is required: 'memory' or 'redis'");
  const type = oneOf(o.type, [...path, 'type'], ['memory', 'redis'] as const);
  if (type === 'memory') {
    onlyKeys(o, path, MEMORY_KEYS);
    const options = {
      ...(o.maxKeys !== undefined && { maxKeys: positiveInt(o.maxKeys, [...path, 'maxKeys']) }),
      ...(o.overflowSlots !== undefined && { overflowSlots: positiveInt(o.overflowSlots, [...path, 'overflowSlots']) }),
    };
    // The library's own checks, so both refuse the same values.
    rebase(path, () => resolveMemoryStoreOptions(options), (opt) => opt.replace(/^memoryStore\./, ''));
    return { type, ...options };
  }
  onlyKeys(o, path, REDIS_KEYS);
  if (o.url === undefined) fail('RC_INVALID_OPTION', [...path, 'url'], 'is required for a redis store, for example redis://127.0.0.1:6379');
  const url = string(o.url, [...path, 'url']);
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '') {
    fail('RC_INVALID_OPTION', [...path, 'url'], `${JSON.stringify(url)} is not a redis:// or rediss:// URL with a host`);
  }
  const breaker = o.breaker === undefined ? undefined : mapping(o.breaker, [...path, 'breaker'], 'the circuit breaker');
  if (breaker !== undefined) onlyKeys(breaker, [...path, 'breaker'], ['failureThreshold', 'cooldown']);
  const deadline = o.deadline;
  if (deadline !== undefined) parseDuration(deadline, formatPath([...path, 'deadline']));
  if (breaker?.cooldown !== undefined) parseDuration(breaker.cooldown, formatPath([...path, 'breaker', 'cooldown']));
  return {
    type,
    url,
    ...(deadline !== undefined && { deadline: deadline as RedisDuration }),
    ...(o.prefix !== undefined && { prefix: string(o.prefix, [...path, 'prefix']) }),
    ...(o.timeMode !== undefined && { timeMode: oneOf(o.timeMode, [...path, 'timeMode'], ['server', 'client'] as const) }),
    ...(o.cluster !== undefined && { cluster: boolean(o.cluster, [...path, 'cluster']) }),
    ...(o.keySecretEnv !== undefined && { keySecretEnv: envName(o.keySecretEnv, [...path, 'keySecretEnv']) }),
    ...(breaker !== undefined && {
      breaker: {
        ...(breaker.failureThreshold !== undefined && { failureThreshold: positiveInt(breaker.failureThreshold, [...path, 'breaker', 'failureThreshold']) }),
        ...(breaker.cooldown !== undefined && { cooldown: breaker.cooldown as RedisDuration }),
      },
    }),
  };
}

/** An environment variable name (the secret itself never sits in the file). */
function envName(v: unknown, path: ConfigPath): string {
  const name = string(v, path);
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name)) fail('RC_INVALID_OPTION', path, `must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*), got ${JSON.stringify(name)}`);
  return name;
}

type RedisDuration = NonNullable<Extract<StoreConfig, { type: 'redis' }>['deadline']>;

function identify(v: unknown, path: ConfigPath, baseDir: string): IdentifyConfig {
  const o = mapping(v, path, "{ header: x-user-id } or { jwt: { secret | publicKeyFile | jwksFile, claim } }");
  onlyKeys(o, path, ['header', 'jwt']);
  if ((o.header === undefined) === (o.jwt === undefined)) fail('RC_INVALID_OPTION', path, 'needs exactly one of header or jwt');
  if (o.header !== undefined) {
    const header = string(o.header, [...path, 'header']).toLowerCase();
    if (!HEADER_NAME.test(header)) fail('RC_INVALID_OPTION', [...path, 'header'], `${JSON.stringify(o.header)} is not a header name`);
    return { header };
  }
  const jpath = [...path, 'jwt'];
  const j = mapping(o.jwt, jpath, 'the JWT verification');
  onlyKeys(j, jpath, JWT_KEYS);
  const sources = (['secret', 'publicKeyFile', 'jwksFile'] as const).filter((k) => j[k] !== undefined);
  if (sources.length !== 1) fail('RC_INVALID_OPTION', jpath, `needs exactly one key source: secret, publicKeyFile or jwksFile${sources.length > 1 ? `, got ${sources.join(' and ')}` : ''}`);
  const file = (k: 'publicKeyFile' | 'jwksFile'): string => {
    const f = string(j[k], [...jpath, k]);
    return isAbsolute(f) ? f : resolve(baseDir, f);
  };
  let audience: string | readonly string[] | undefined;
  if (j.audience !== undefined) {
    audience = Array.isArray(j.audience) ? list(j.audience, [...jpath, 'audience'], 'audiences').map((a, i) => string(a, [...jpath, 'audience', i])) : string(j.audience, [...jpath, 'audience']);
  }
  const jwt: JwtConfig = {
    claim: j.claim === undefined ? 'sub' : string(j.claim, [...jpath, 'claim']),
    ...(j.secret !== undefined && { secret: string(j.secret, [...jpath, 'secret']) }),
    ...(j.publicKeyFile !== undefined && { publicKeyFile: file('publicKeyFile') }),
    ...(j.jwksFile !== undefined && { jwksFile: file('jwksFile') }),
    ...(j.issuer !== undefined && { issuer: string(j.issuer, [...jpath, 'issuer']) }),
    ...(audience !== undefined && { audience }),
    ...(j.algorithms !== undefined && {
      algorithms: list(j.algorithms, [...jpath, 'algorithms'], 'JWS algorithm names').map((a, i) => string(a, [...jpath, 'algorithms', i])),
    }),
  };
  return { jwt };
}

function http(v: unknown, baseDir: string): HttpConfig {
  const path = ['http'];
  const o = mapping(v, path, 'the HTTP contract options');
  onlyKeys(o, path, HTTP_KEYS);
  // The adapters' own validators, so the file and the library refuse the same values.
  rebase(path, () => resolveIpOptions(o as IpOptions));
  rebase(path, () => resolveResponseOptions({ ...(o as ResponseOptions), partitionKeySecret: 'x' }));
  if (o.maxBodyBytes !== undefined) positiveInt(o.maxBodyBytes, [...path, 'maxBodyBytes']);
  const id = o.identify === undefined ? undefined : identify(o.identify, [...path, 'identify'], baseDir);
  if (id !== undefined && 'header' in id && (o.trustProxy === undefined || o.trustProxy === 0 || (Array.isArray(o.trustProxy) && o.trustProxy.length === 0))) {
    fail('RC_INVALID_OPTION', [...path, 'identify', 'header'], 'an identity header is honoured only from trusted proxies, and http.trustProxy is not set: nobody could set it');
  }
  const rest = Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'identify')) as Omit<HttpConfig, 'identify'>;
  return { ...rest, ...(id !== undefined && { identify: id }) };
}

function limits(v: unknown, storeNames: ReadonlySet<string>): { defs: LimitDefinition[]; compiled: CompiledLimit[] } {
  const defs = list(v, ['limits'], 'limit definitions') as LimitDefinition[];
  defs.forEach((d, i) => {
    mapping(d, ['limits', i], `a limit definition with ${LIMIT_OPTIONS.slice(0, 6).join(', ')}, ...`);
    if (typeof d.key === 'function') fail('RC_INVALID_KEY', ['limits', i, 'key'], 'must be a key extractor name');
  });
  // The library's validator, unchanged: one validation path for the file and createLimiter.
  const compiled = defs.length === 0 ? [] : compileLimits(defs, storeNames);
  return { defs, compiled };
}

function routes(v: unknown, names: readonly string[]): RouteConfig[] {
  const seen = new Map<string, number>();
  return list(v, ['routes'], "routes: { match: 'POST /otp/send', limits: [...] }").map((r, i): RouteConfig => {
    const path = ['routes', i];
    const o = mapping(r, path, "a route: { match: 'POST /otp/send', limits: [...] }");
    onlyKeys(o, path, ['match', 'limits']);
    if (o.match === undefined) fail('RC_INVALID_ROUTE', [...path, 'match'], "is required: 'METHOD /path', for example 'POST /otp/send'");
    const pattern = parseRoutePattern(o.match, formatPath([...path, 'match']));
    const before = seen.get(pattern.shape);
    if (before !== undefined) fail('RC_DUPLICATE_ROUTE', [...path, 'match'], `${JSON.stringify(pattern.source)} matches the same requests as routes[${before}]; merge them`);
    seen.set(pattern.shape, i);
    if (o.limits === undefined) fail('RC_INVALID_OPTION', [...path, 'limits'], 'is required: the chain of limit names, or [] for an explicitly unlimited route');
    const chain = list(o.limits, [...path, 'limits'], 'limit names, most specific first; [] for unlimited').map((n, j) => {
      if (typeof n !== 'string') fail('RC_UNKNOWN_LIMIT', [...path, 'limits', j], `must be a limit name, got ${describe(n)}`);
      if (!names.includes(n)) fail('RC_UNKNOWN_LIMIT', [...path, 'limits', j], `no limit named ${JSON.stringify(n)}${didYouMean(n, names)}`);
      return n;
    });
    const dup = chain.findIndex((n, j) => chain.indexOf(n) !== j);
    if (dup >= 0) fail('RC_DUPLICATE_NAME', [...path, 'limits', dup], `${JSON.stringify(chain[dup])} appears twice in this chain`);
    return { match: pattern.source, limits: chain, pattern };
  });
}

/** Options of `validateConfig`. */
export interface ValidateOptions {
  /** The file name for messages. */
  readonly file: string;
  /** Folder that relative paths in the file (`publicKeyFile`, `jwksFile`) are resolved against. Default the working directory. */
  readonly baseDir?: string | undefined;
}

/**
 * Validates a parsed config document (plain data, as YAML or JSON gives it)
 * and returns the typed config. Throws a `ConfigError` whose `option` is
 * the path inside the file (`limits[2].window`); `parseConfig` adds the file
 * name and line.
 */
export function validateConfig(doc: unknown, options: ValidateOptions): RateContractConfig {
  const baseDir = options.baseDir ?? process.cwd();
  if (doc === null || doc === undefined) fail('RC_INVALID_OPTION', [], 'the file is empty; it needs at least limits and routes');
  const o = mapping(doc, [], 'stores, replicas, limits, routes, http');
  noNulls(o, []);
  onlyKeys(o, [], TOP);
  if (o.$schema !== undefined) string(o.$schema, ['$schema']);
  const stores: Record<string, StoreConfig> = {};
  if (o.stores !== undefined) {
    for (const [name, s] of Object.entries(mapping(o.stores, ['stores'], 'store name -> { type, ... }'))) {
      if (!NAME_PATTERN.test(name)) fail('RC_INVALID_NAME', ['stores', name], `a store name must match [a-z0-9_-]{1,64}`);
      // Stores are looked up by name in plain objects, where `__proto__` is the prototype, not a key.
      if (name === '__proto__') fail('RC_INVALID_NAME', ['stores', name], 'a store cannot be named __proto__ (it would set the prototype of the store table, not add a store)');
      stores[name] = store(s, ['stores', name]);
    }
  }
  let replicas: number | 'discover' = 1;
  if (o.replicas !== undefined) {
    if (o.replicas === 'discover') {
      replicas = 'discover';
      if (!Object.values(stores).some((s) => s.type === 'redis')) {
        fail('RC_INVALID_OPTION', ['replicas'], "'discover' counts live replicas through heartbeats in a Redis store, and no store has type: redis; give a number");
      }
    } else if (typeof o.replicas === 'number') replicas = positiveInt(o.replicas, ['replicas']);
    else fail('RC_INVALID_OPTION', ['replicas'], `must be a positive integer or 'discover', got ${describe(o.replicas)}`);
  }
  if (o.limits === undefined) fail('RC_INVALID_OPTION', ['limits'], 'is required: the list of limit definitions');
  if (o.routes === undefined) fail('RC_INVALID_OPTION', ['routes'], 'is required: the list of routes and their chains');
  const { defs, compiled } = limits(o.limits, new Set(Object.keys(stores)));
  const rs = routes(o.routes, compiled.map((l) => l.name));
  return {
    file: options.file,
    stores,
    replicas,
    limits: defs,
    compiled,
    routes: rs,
    http: o.http === undefined ? {} : http(o.http, baseDir),
  };
}
