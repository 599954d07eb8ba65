/**
 * Documented defaults held to the code. Every table in README.md and docs/
 * with a "default" column is found here and must have an entry in TABLES,
 * row for row; each row's default cell is compared with the code's constant,
 * with what the code resolves when the option is left out, or (for a default
 * that is a behaviour, not a value: "the system clock") with its exact text,
 * so that changing it fails until this file says why. The CLI flag tables
 * are compared with each command's own option specs (its `--help`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/packed.js';
import { createLimiter, createShedder, DEFAULT_DEADLINE_MS, DEFAULT_FAIL_CLOSED_AFTER_MS, DEFAULT_MAX_IN_FLIGHT, DEFAULT_STARTUP_WAIT_MS, memoryStore, parseDuration, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';
import { BREAKER_DEFAULTS, DEFAULT_DEAD_CONNECTION_MS } from '../../../packages/ratecontract/src/core/store-circuit.js';
import { LIMITER_DEFAULTS } from '../../../packages/ratecontract/src/core/limiter.js';
import { SHEDDER_DEFAULTS } from '../../../packages/ratecontract/src/core/shedder.js';
import { MEMORY_STORE_DEFAULTS } from '../../../packages/ratecontract/src/stores/memory/memory-store.js';
import { REDIS_STORE_DEFAULTS, redisStore } from '../../../packages/ratecontract/src/stores/redis/redis-store.js';
import { REDIS_HTTP_STORE_DEFAULTS, redisHttpStore } from '../../../packages/ratecontract/src/stores/redis-http/index.js';
import { PG_QUOTA_STORE_DEFAULTS, pgQuotaStore } from '../../../packages/ratecontract/src/stores/pg/index.js';
import { DEFAULT_MAX_BODY_BYTES, resolveIpOptions, resolveResponseOptions } from '../../../packages/ratecontract/src/http/index.js';
import { DEFAULT_ERROR_RETRY_AFTER_MS } from '../../../packages/ratecontract/src/http/guard.js';
import { DEFAULTS as CLIENT_DEFAULTS } from '../../../packages/ratecontract/src/client/options.js';
import { validateConfig } from '../../../packages/ratecontract/src/config/index.js';
import { DROP_IN_PURPOSE, parseRlsConfig } from '../../../packages/cli/src/rls/config.js';
import { replayCommand } from '../../../packages/cli/src/cli/replay-command.js';
import { suggestCommand } from '../../../packages/cli/src/cli/suggest-command.js';
import { rlsCommand } from '../../../packages/cli/src/cli/rls.js';
import { serveCommand } from '../../../packages/cli/src/cli/serve.js';
import { decideCommand } from '../../../packages/cli/src/cli/decide.js';
import { simulateCommand } from '../../../packages/cli/src/cli/simulate-command.js';
import type { Command } from '../../../packages/cli/src/cli/args.js';

// ---------------------------------------------------------------- the tables

interface DocTable {
  readonly file: string;
  readonly line: number;
  /** `docs/x.md > Heading #n`: the n-th table with a default column under that heading. */
  readonly id: string;
  /** Row key (the first cell, without backticks) to the default cell as written. */
  readonly rows: ReadonlyMap<string, string>;
}

function pages(): string[] {
  const out = ['README.md'];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.isDirectory()) walk(`${dir}/${e.name}`);
      else if (e.name.endsWith('.md')) out.push(`${dir}/${e.name}`);
    }
  };
  walk('docs');
  return out;
}

const cells = (row: string): string[] =>
  row
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim().replace(/\\\|/g, '|'));

/** Every table with a "default" column, outside fenced blocks. */
export function defaultTables(file: string, text: string): DocTable[] {
  const lines = text.split('\n');
  const out: DocTable[] = [];
  let heading = '(top)';
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (f !== null) {
      if (fence === undefined) fence = f[1];
      else if (f[1]?.[0] === fence[0] && (f[1]?.length ?? 0) >= fence.length) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const h = /^#{1,6}\s+(.*)$/.exec(line);
    if (h !== null) heading = (h[1] ?? '').trim();
    if (!line.trim().startsWith('|') || !/^\s*\|\s*:?-{3,}/.test(lines[i + 1] ?? '')) continue;
    const header = cells(line).map((c) => c.toLowerCase());
    const col = header.findIndex((c) => /\bdefault\b/.test(c));
    if (col < 0) continue;
    const rows = new Map<string, string>();
    let j = i + 2;
    for (; j < lines.length && (lines[j] ?? '').trim().startsWith('|'); j++) {
      const c = cells(lines[j] ?? '');
      rows.set((c[0] ?? '').replace(/`/g, ''), c[col] ?? '');
    }
    const key = `${file} > ${heading}`;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    out.push({ file, line: i + 1, id: `${key} #${String(n)}`, rows });
    i = j - 1;
  }
  return out;
}

// ---------------------------------------------------------------- reading a cell

/** The cell's leading value: its first code span (with a unit written after it), else the text before a comment. */
function leading(cell: string): string {
  const code = /^`([^`]*)`(\s*(?:ms|s)\b)?/.exec(cell);
  if (code !== null) return `${code[1] ?? ''}${(code[2] ?? '').trim()}`;
  return cell.split(/ \(|; |, | for /)[0]?.trim() ?? '';
}

const unquote = (s: string): string => s.replace(/^['"](.*)['"]$/, '$1');

/** A duration as the docs write one (`20ms`, `20 ms`, `1s`, `'30s'`, a bare number of ms). */
function docMs(token: string): number {
  const t = unquote(token).replace(/[_,]/g, '').replace(/(\d)\s+(ms|s|m|h|d)$/, '$1$2');
  return /^\d+(\.\d+)?$/.test(t) ? Number(t) : parseDuration(t, 'doc');
}

/** A JS-like literal as the docs write one (`[429, 503]`, `{ ratio: 0.1 }`, `['GET']`). */
function docLiteral(token: string): unknown {
  const json = token.replace(/'/g, '"').replace(/([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:/g, '$1"$2":');
  return JSON.parse(json) as unknown;
}

type Expectation = (cell: string) => void;

const num = (n: number): Expectation => (cell) => expect(Number(unquote(leading(cell)).replace(/[_,]/g, ''))).toBe(n);
const ms = (n: number): Expectation => (cell) => expect(docMs(leading(cell))).toBe(n);
const str = (s: string): Expectation => (cell) => expect(unquote(leading(cell))).toBe(s);
const bool = (b: boolean): Expectation => (cell) => expect(b ? ['true', 'on'] : ['false', 'off']).toContain(leading(cell));
const lit = (v: unknown): Expectation => (cell) => expect(docLiteral(leading(cell))).toEqual(v);
/** A default that is a behaviour: the exact text, and a check of the behaviour where one is cheap. */
const text = (t: string, probe?: () => void): Expectation => (cell) => {
  expect(cell).toBe(t);
  probe?.();
};
const required = (probe: () => void): Expectation => (cell) => {
  expect(cell).toMatch(/^required\b/);
  probe();
};
const none = (probe?: () => void): Expectation => (cell) => {
  expect(['', 'none', 'nothing']).toContain(leading(cell));
  probe?.();
};
/** A row whose cell is empty: the option has no default (a file, a flag that only switches something on). */
const empty: Expectation = (cell) => expect(cell).toBe('');

// ---------------------------------------------------------------- the code's values

const limit = (extra: Partial<LimitDefinition> = {}): LimitDefinition => ({ name: 'x', purpose: 'abuse', limit: 5, window: '1m', ...extra });
const compiled = (extra: Partial<LimitDefinition> = {}) => createLimiter({ limits: [limit(extra)] }).limits[0] as ReturnType<typeof createLimiter>['limits'][number];
const throwsWithout = (fn: () => unknown, name: string): void => expect(fn).toThrow(new RegExp(name));
const response = resolveResponseOptions({});
const ip = resolveIpOptions({});
const minimalConfig = validateConfig({ limits: [], routes: [] }, { file: 'x.yaml' }) as unknown as Record<string, unknown>;
const rlsRule = parseRlsConfig([{ file: 'x.yaml', text: 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 10 }\n' }]).rules[0];
const rlsAbuseRule = parseRlsConfig([{ file: 'x.yaml', text: 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 10, purpose: abuse }\n' }]).rules[0];

/** The limit definition's table, in docs/limits.md and (as file keys) docs/config.md. */
const LIMIT_ROWS: Record<string, Expectation> = {
  name: required(() => throwsWithout(() => createLimiter({ limits: [{ ...limit(), name: undefined } as never] }), 'name')),
  onError: text('`closed` for abuse, `degraded` for shedding', () => {
    expect(compiled().onError).toBe('closed');
    expect(compiled({ purpose: 'shedding' }).onError).toBe('degraded');
  }),
  acknowledgeFailOpen: none(() => expect(compiled().acknowledgeFailOpen).toBeUndefined()),
  algorithm: str(compiled().algorithm),
  limit: required(() => throwsWithout(() => createLimiter({ limits: [{ ...limit(), limit: undefined } as never] }), 'limit')),
  window: required(() => throwsWithout(() => createLimiter({ limits: [{ ...limit(), window: undefined } as never] }), 'window')),
  burst: (cell) => {
    expect(leading(cell)).toBe('limit');
    expect(compiled({ limit: 7 }).params.burst).toBe(7);
  },
  precision: (cell) => {
    expect(leading(cell)).toBe('1');
    expect(compiled({ algorithm: 'sliding-window' }).params.precision ?? 1).toBe(1);
  },
  mode: (cell) => {
    expect(unquote(leading(cell))).toBe('meter');
    expect(compiled({ algorithm: 'leaky-bucket' }).params.queue).toBe(false);
  },
  key: str(compiled().keySpec),
  cost: num(compiled().cost),
  reason: none(() => expect(compiled().reason).toBeUndefined()),
  shadow: bool(compiled().shadow),
  store: text('the default store', () => expect(compiled().storeName).toBeUndefined()),
  countRejected: bool(compiled().countRejected),
  status: (cell) => {
    expect(cell).toMatch(/^503 for `key: '?global'?`, else 429$/);
    expect(compiled({ key: 'global' }).status).toBe(503);
    expect(compiled().status).toBe(429);
  },
  failClosedAfter: ms(DEFAULT_FAIL_CLOSED_AFTER_MS),
  plans: none(),
  plan: none(),
  tier: none(() => expect(compiled().tier).toBeUndefined()),
  keySlots: none(() => expect(compiled().keySlots).toBeUndefined()),
};

const cliFlags = (command: Command): ((row: string) => Expectation) => (row) => (cell) => {
  // `--limit N`, or `FILE, --config FILE` for a flag that is also a positional.
  const name = /(?:^|\s)--([a-z-]+)/.exec(row)?.[1] ?? '';
  const spec = command.options[name];
  expect(spec, `${command.name} has no --${name}`).toBeDefined();
  const want = spec?.default;
  const plain = cell.replace(/`/g, '');
  if (want === undefined) {
    if (spec?.description.includes('(required)') === true) expect(plain).toBe('required');
    else expect(['', 'off', 'none']).toContain(leading(plain));
  } else if (/^\d+(ms|s|m|h|d)$/.test(want)) {
    expect(docMs(leading(cell))).toBe(parseDuration(want as never, name));
  } else {
    expect([plain, leading(plain)]).toContain(want);
  }
};

/**
 * A table of an options object whose defaults the code exports as one
 * object: a row names a path in it (`backoff.base`), compared by the value's
 * type; `overrides` for the rows that are not plain values there.
 */
function fromDefaults(defaults: object, overrides: Record<string, Expectation>): (row: string) => Expectation {
  return (row) => {
    const own = overrides[row];
    if (own !== undefined) return own;
    let value: unknown = defaults;
    for (const part of row.split('.')) value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
    if (typeof value === 'number') return ms(value);
    if (typeof value === 'boolean') return bool(value);
    if (typeof value === 'string') return str(value);
    if (Array.isArray(value)) return lit(value);
    return () => expect.fail(`no default for "${row}" in the code's defaults, and no override here`);
  };
}

/** Each table: its rows, or (for CLI flag tables) one check for every row. */
const TABLES: Record<string, Record<string, Expectation> | ((row: string) => Expectation)> = {
  'docs/cli.md > simulate #1': cliFlags(simulateCommand),
  'docs/cli.md > replay #1': cliFlags(replayCommand),
  'docs/cli.md > suggest #1': cliFlags(suggestCommand),
  'docs/rls.md > `ratecontract rls`: an Envoy global rate limit service #1': cliFlags(rlsCommand),
  'docs/serve.md > Flags #1': cliFlags(serveCommand),
  'docs/decide.md > Flags #1': cliFlags(decideCommand),

  'docs/client.md > Options #1': fromDefaults(CLIENT_DEFAULTS, {
    fetch: text('`globalThis.fetch` (read at call time)'),
    budget: lit({ ratio: CLIENT_DEFAULTS.budget.ratio, minRetries: CLIENT_DEFAULTS.budget.minRetries, window: CLIENT_DEFAULTS.budget.windowMs }),
    adaptiveThrottle: bool(false),
    retryNetworkErrors: bool(true),
    partition: text('one partition per origin'),
    onWait: none(),
    sleep: (cell) => expect(cell).toMatch(/setTimeout/),
    random: text('`Math.random`'),
    clock: text('the system clock'),
    signal: none(),
  }),

  'docs/config.md > Top level #1': {
    $schema: empty,
    stores: (cell) => {
      expect(docLiteral(leading(cell))).toEqual({});
      expect(minimalConfig['stores'] ?? {}).toEqual({});
    },
    replicas: (cell) => {
      expect(Number(leading(cell))).toBe(LIMITER_DEFAULTS.replicas);
      expect(minimalConfig['replicas']).toBe(LIMITER_DEFAULTS.replicas);
    },
    limits: required(() => expect(() => validateConfig({ routes: [] }, { file: 'x.yaml' })).toThrow(/limits/)),
    routes: required(() => expect(() => validateConfig({ limits: [] }, { file: 'x.yaml' })).toThrow(/routes/)),
    http: (cell) => {
      expect(docLiteral(leading(cell))).toEqual({});
      expect(minimalConfig['http'] ?? {}).toEqual({});
    },
  },
  'docs/config.md > `stores.<name>` #1': {
    type: required(() => expect(() => validateConfig({ stores: { a: {} }, limits: [], routes: [] }, { file: 'x.yaml' })).toThrow(/type/)),
    maxKeys: num(MEMORY_STORE_DEFAULTS.maxKeys),
    overflowSlots: num(MEMORY_STORE_DEFAULTS.overflowSlots),
  },
  'docs/config.md > `stores.<name>` #2': {
    type: required(() => undefined),
    url: required(() => expect(() => validateConfig({ stores: { a: { type: 'redis' } }, limits: [], routes: [] }, { file: 'x.yaml' })).toThrow(/url/)),
    deadline: ms(DEFAULT_DEADLINE_MS),
    prefix: str(REDIS_STORE_DEFAULTS.prefix),
    keySecretEnv: none(),
    timeMode: str(REDIS_STORE_DEFAULTS.timeMode),
    cluster: bool(false),
    'breaker.failureThreshold': num(BREAKER_DEFAULTS.failureThreshold),
    'breaker.cooldown': ms(BREAKER_DEFAULTS.cooldownMs),
  },
  'docs/config.md > `limits[i]` #1': {
    ...LIMIT_ROWS,
    purpose: text('required, no default', () => throwsWithout(() => createLimiter({ limits: [{ ...limit(), purpose: undefined } as never] }), 'purpose')),
    algorithm: str(compiled().algorithm),
    burst: (cell) => {
      expect(cell).toMatch(/^`limit`; /);
      expect(compiled({ limit: 7 }).params.burst).toBe(7);
    },
    key: str(compiled().keySpec),
    acknowledgeFailOpen: text('required for `onError: open` on an abuse limit', () => throwsWithout(() => createLimiter({ limits: [limit({ onError: 'open' })] }), 'acknowledgeFailOpen')),
    reason: none(),
    failClosedAfter: ms(DEFAULT_FAIL_CLOSED_AFTER_MS),
    costFromContentLength: bool(compiled().costSpec === 'content-length'),
    'count, failureStatus': (cell) => {
      expect(leading(cell)).toBe('all');
      expect(compiled().count).toBe('all');
    },
  },
  'docs/config.md > `http` #1': {
    trustProxy: none(() => expect(ip.trust).toEqual({ kind: 'none' })),
    forwardedHeader: str(ip.header),
    ipv6Prefix: num(ip.ipv6Prefix),
    ipv4Prefix: num(ip.ipv4Prefix),
    advertise: str(response.advertise),
    fields: str(response.fields as string),
    legacyHeaders: bool(response.legacyHeaders),
    advertiseCapacity: bool(response.advertiseCapacity),
    windowCap: none(() => expect(response.windowCapMs).toBeUndefined()),
    maxBodyBytes: num(DEFAULT_MAX_BODY_BYTES),
    identify: text('nobody is identified'),
  },
  'docs/adapters/options.md > Adapter options (shared) #1': {
    'context(req, base)': text('the base context'),
    'identify(req)': text('everyone anonymous'),
    trustProxy: none(() => expect(ip.trust).toEqual({ kind: 'none' })),
    forwardedHeader: str(ip.header),
    ipv6Prefix: num(ip.ipv6Prefix),
    ipv4Prefix: num(ip.ipv4Prefix),
    advertise: str(response.advertise),
    fields: str(response.fields as string),
    legacyHeaders: bool(response.legacyHeaders),
    advertiseCapacity: bool(response.advertiseCapacity),
    windowCap: none(() => expect(response.windowCapMs).toBeUndefined()),
    partitionKeys: bool(response.partitionKeys),
    partitionKeySecret: text('random per process', () => expect(resolveResponseOptions({}).partitionKeySecret).toEqual(response.partitionKeySecret)),
    maxBodyBytes: num(DEFAULT_MAX_BODY_BYTES),
    readBody: bool(false),
    'cost(req)': text("each limit's `cost`"),
    'limiterFor(req)': text("the adapter's limiter"),
    errorRetryAfter: ms(DEFAULT_ERROR_RETRY_AFTER_MS),
    'onUnexpectedError(error, req)': none(),
    'delay(ms, signal)': (cell) => expect(cell).toMatch(/timer/),
    clock: text('system clock'),
  },
  'docs/fail-modes.md > The decision table #1': {
    open: (cell) => {
      expect(leading(cell)).toBe('nothing');
      expect(() => createLimiter({ limits: [limit({ onError: 'open' })] })).toThrow(/acknowledgeFailOpen/);
    },
    degraded: (cell) => {
      expect(leading(cell)).toBe('shedding');
      expect(compiled({ purpose: 'shedding' }).onError).toBe('degraded');
    },
    closed: (cell) => {
      expect(leading(cell)).toBe('abuse');
      expect(compiled().onError).toBe('closed');
    },
  },
  'docs/fail-modes.md > Deadlines and circuit breakers #1': {
    failureRate: num(BREAKER_DEFAULTS.failureRate),
    minimumCalls: num(BREAKER_DEFAULTS.minimumCalls),
    windowMs: num(BREAKER_DEFAULTS.windowMs),
    failureThreshold: num(BREAKER_DEFAULTS.failureThreshold),
    cooldownMs: num(BREAKER_DEFAULTS.cooldownMs),
    maxCooldownMs: num(BREAKER_DEFAULTS.maxCooldownMs),
    probeSuccesses: num(BREAKER_DEFAULTS.probeSuccesses),
  },
  'docs/limits.md > A limit definition #1': {
    ...LIMIT_ROWS,
    purpose: text('required, no default', () => throwsWithout(() => createLimiter({ limits: [{ ...limit(), purpose: undefined } as never] }), 'purpose')),
    failClosedAfter: ms(DEFAULT_FAIL_CLOSED_AFTER_MS),
  },
  'docs/limits.md > `createLimiter(options)` #1': {
    limits: required(() => throwsWithout(() => createLimiter({} as never), 'limits')),
    defaultStore: text('`memoryStore()`'),
    stores: lit({}),
    clock: text('system clock'),
    replicas: num(LIMITER_DEFAULTS.replicas),
    heartbeatMs: num(LIMITER_DEFAULTS.heartbeatMs),
    failClosedRetryAfterMs: num(LIMITER_DEFAULTS.failClosedRetryAfterMs),
    shadowReport: lit({}),
  },
  'docs/redis.md > Options #1': {
    client: required(() => expect(() => redisStore({} as never)).toThrow(/client/)),
    prefix: str(REDIS_STORE_DEFAULTS.prefix),
    timeMode: str(REDIS_STORE_DEFAULTS.timeMode),
    clock: none(),
    ttlGraceMs: num(REDIS_STORE_DEFAULTS.ttlGraceMs),
    keySecret: none(),
    cluster: text('detected'),
    'deadlineMs, breaker': ms(DEFAULT_DEADLINE_MS),
    maxInFlight: num(DEFAULT_MAX_IN_FLIGHT),
    startupWaitMs: num(DEFAULT_STARTUP_WAIT_MS),
    deadConnectionMs: num(DEFAULT_DEAD_CONNECTION_MS),
    onDeadConnection: str(REDIS_STORE_DEFAULTS.onDeadConnection),
    batch: (cell) => {
      expect(docLiteral(leading(cell))).toEqual({ maxChecks: REDIS_STORE_DEFAULTS.maxChecks });
      expect(cell).toContain(`(${String(REDIS_STORE_DEFAULTS.maxChecksNodeRedis)} with node-redis)`);
    },
  },
  'docs/redis-http.md > Options #1': {
    url: required(() => expect(() => redisHttpStore({ token: 't' } as never)).toThrow(/redisHttpStore\.url: is required/)),
    token: required(() => expect(() => redisHttpStore({ url: 'https://x.upstash.io' } as never)).toThrow(/redisHttpStore\.token: is required/)),
    fetch: text('`globalThis.fetch`'),
    prefix: str(REDIS_STORE_DEFAULTS.prefix),
    timeMode: str(REDIS_STORE_DEFAULTS.timeMode),
    clock: none(),
    ttlGraceMs: num(REDIS_STORE_DEFAULTS.ttlGraceMs),
    keySecret: none(),
    deadlineMs: num(REDIS_HTTP_STORE_DEFAULTS.deadlineMs),
    loadTimeoutMs: num(REDIS_HTTP_STORE_DEFAULTS.loadTimeoutMs),
    maxInFlight: num(DEFAULT_MAX_IN_FLIGHT),
    startupWaitMs: num(DEFAULT_STARTUP_WAIT_MS),
    breaker: text("the limiter's"),
    batch: lit({ maxChecks: REDIS_STORE_DEFAULTS.maxChecks }),
  },
  'docs/pg.md > Options #1': {
    pool: required(() => expect(() => pgQuotaStore({} as never)).toThrow(/pgQuotaStore\.pool: is required/)),
    table: str(PG_QUOTA_STORE_DEFAULTS.table),
    flushMs: num(PG_QUOTA_STORE_DEFAULTS.flushMs),
    flushUnits: num(PG_QUOTA_STORE_DEFAULTS.flushUnits),
    cacheMs: num(PG_QUOTA_STORE_DEFAULTS.cacheMs),
    queryTimeoutMs: num(PG_QUOTA_STORE_DEFAULTS.queryTimeoutMs),
    keySecret: none(),
    deadlineMs: num(PG_QUOTA_STORE_DEFAULTS.deadlineMs),
    maxInFlight: text("the limiter's"),
    startupWaitMs: text("the limiter's"),
    breaker: text("the limiter's"),
  },
  'docs/rls.md > Extensions on `rate_limit` #1': {
    // A rule that states none of them, as the library's compiler made it.
    algorithm: str(rlsRule?.compiled?.algorithm ?? ''),
    burst: (cell) => {
      expect(cell).toBe('N');
      expect(rlsRule?.definition?.burst).toBeUndefined();
      expect(rlsRule?.compiled?.params.burst).toBe(rlsRule?.requestsPerUnit);
    },
    purpose: (cell) => {
      expect(cell).toMatch(/^not stated: `shedding`, the drop-in default/);
      expect(rlsRule?.purposeStated).toBe(false);
      expect(rlsRule?.compiled?.purpose).toBe(DROP_IN_PURPOSE);
    },
    onError: text("the library's default for the purpose: `degraded` for shedding, `closed` for abuse", () => {
      expect(rlsRule?.definition?.onError).toBeUndefined();
      expect(rlsRule?.compiled?.onError).toBe('degraded');
      expect(rlsAbuseRule?.compiled?.onError).toBe('closed');
    }),
    acknowledgeFailOpen: required(() => undefined),
    failClosedAfter: (cell) => {
      expect(docMs(leading(cell))).toBe(DEFAULT_FAIL_CLOSED_AFTER_MS);
      expect(rlsAbuseRule?.compiled?.failClosedAfterMs).toBe(DEFAULT_FAIL_CLOSED_AFTER_MS);
    },
    reason: none(() => expect(rlsRule?.reason).toBeUndefined()),
    store: str(rlsRule?.store ?? ''),
  },
  'docs/shedding.md > Options #1': {
    target: required(() => expect(() => createShedder({} as never)).toThrow(/target/)),
    driver: str(SHEDDER_DEFAULTS.driver),
    maxInFlight: (cell) => expect(cell).toBe(`${String(SHEDDER_DEFAULTS.maxInFlightPerTarget)} x target (in-flight driver), else none`),
    criticalReserve: num(SHEDDER_DEFAULTS.criticalReserve),
    interval: ms(SHEDDER_DEFAULTS.intervalMs),
    decrease: num(SHEDDER_DEFAULTS.decrease),
    increase: num(SHEDDER_DEFAULTS.increase),
    lowWater: num(SHEDDER_DEFAULTS.lowWater),
    retryAfter: ms(SHEDDER_DEFAULTS.retryAfterMs),
    'clock, onStep': text('system clock, none'),
  },
  'docs/stores.md > The memory store #1': {
    maxKeys: (cell) => {
      num(MEMORY_STORE_DEFAULTS.maxKeys)(cell);
      expect(memoryStore().maxKeys).toBe(MEMORY_STORE_DEFAULTS.maxKeys);
    },
    overflowSlots: (cell) => {
      num(MEMORY_STORE_DEFAULTS.overflowSlots)(cell);
      expect(memoryStore().overflowSlots).toBe(MEMORY_STORE_DEFAULTS.overflowSlots);
    },
    sweepPerInsert: num(MEMORY_STORE_DEFAULTS.sweepPerInsert),
  },
};

// ---------------------------------------------------------------- the test

const tables = pages().flatMap((p) => defaultTables(p, readFileSync(join(ROOT, p), 'utf8')));

describe('documented defaults, held to the code', () => {
  it('finds the tables, and every one has an entry here (and no entry is for a table that is gone)', () => {
    expect(tables.length).toBeGreaterThanOrEqual(19);
    expect(tables.map((t) => t.id).sort()).toEqual(Object.keys(TABLES).sort());
  });

  it.each(tables.map((t) => [`${t.file}:${String(t.line)} (${t.id})`, t] as const))('%s', (_name, table) => {
    const spec = TABLES[table.id];
    if (spec === undefined) throw new Error(`${table.file}:${String(table.line)}: no entry in TABLES for ${table.id}`);
    if (typeof spec !== 'function') expect([...table.rows.keys()].sort(), `${table.file}:${String(table.line)}: rows`).toEqual(Object.keys(spec).sort());
    for (const [row, cell] of table.rows) {
      const check = typeof spec === 'function' ? spec(row) : spec[row];
      try {
        (check as Expectation)(cell);
      } catch (e) {
        throw new Error(`${table.file}:${String(table.line)}: row ${row}, default ${JSON.stringify(cell)}: ${(e as Error).message}`, { cause: e });
      }
    }
  });
});

describe('the defaults check can fail', () => {
  const table = defaultTables('docs/x.md', '## Options\n\n| option | default | meaning |\n| --- | --- | --- |\n| `deadline` | `8ms` | one call |\n| `prefix` | `\'rc:\'` | |\n')[0] as DocTable;

  it('a default changed in the docs is reported', () => {
    expect(table.id).toBe('docs/x.md > Options #1');
    expect(() => ms(DEFAULT_DEADLINE_MS)(table.rows.get('deadline') as string)).toThrow(/expected 8 to be 20/);
    expect(() => str(REDIS_STORE_DEFAULTS.prefix)(table.rows.get('prefix') as string)).not.toThrow();
  });

  it('reads the values the docs write: durations, numbers with separators, literals', () => {
    expect(docMs(leading('`20000` ms (20 s)'))).toBe(20_000);
    expect(docMs(leading('20 ms; see docs/fail-modes.md'))).toBe(20);
    expect(docMs(leading("`'30s'`"))).toBe(30_000);
    expect(Number(leading('1,000,000').replace(/[_,]/g, ''))).toBe(1_000_000);
    expect(docLiteral(leading("`['GET', 'HEAD']` | x"))).toEqual(['GET', 'HEAD']);
    expect(docLiteral('{ ratio: 0.1, minRetries: 10 }')).toEqual({ ratio: 0.1, minRetries: 10 });
  });
});
