/**
 * The PostgreSQL quota store (`ratecontract/pg`) against the machine's real
 * PostgreSQL, in a schema of its own dropped afterwards: the conformance
 * suite's fixed-window cases, the refusal of short windows at construction,
 * one statement per flush, the read cache's staleness, and the bound with
 * several processes, a crash included (docs/pg.md).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, createLimiter, type Duration } from '../../../packages/ratecontract/src/index.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { MIN_QUOTA_WINDOW_MS, pgQuotaMigration, pgQuotaStore, type PgQueryable } from '../../../packages/ratecontract/src/stores/pg/index.js';
import { conformanceCases, describeStoreConformance } from '../../../packages/ratecontract/src/testing/index.js';
import { PG_DATABASE, PG_PORT, PG_USER, pool, useSchema } from './helpers.js';

let db: pg.Pool | undefined;
let schema: { schema: string; drop: () => Promise<void> } | undefined;
let tables = 0;

beforeAll(async () => {
  db = pool();
  schema = await useSchema(db);
}, 30_000);

afterAll(async () => {
  await schema?.drop();
  await db?.end();
}, 30_000);

function database(): pg.Pool {
  if (db === undefined) throw new Error('no pool: beforeAll failed');
  return db;
}

/** A fresh table in the test's schema, created by the documented migration. */
async function freshTable(): Promise<string> {
  const table = `${schema?.schema ?? 'missing'}.quota_${++tables}`;
  await database().query(pgQuotaMigration(table));
  return table;
}

/** A pool that counts the statements it runs, by their first word (`READY` for ready()'s probe). */
function counting(inner: PgQueryable): PgQueryable & { statements: string[] } {
  const statements: string[] = [];
  return {
    statements,
    query: (text, values) => {
      statements.push(text.startsWith('SELECT 1 FROM') ? 'READY' : (text.trim().split(/\s+/)[0] as string));
      return inner.query(text, values);
    },
  };
}

const FIXED_ONLY = conformanceCases.filter((c) => c.limits.every((l) => l.algorithm === 'fixed-window'));

describeStoreConformance('pg quota store (fixed-window cases)', { cases: FIXED_ONLY, createStore: async () => pgQuotaStore({ pool: database(), table: await freshTable() }) }, { describe, it });

describe('pg quota store', () => {
  it('runs the fixed-window cases of the conformance suite (and there are some)', () => {
    expect(FIXED_ONLY.length).toBeGreaterThanOrEqual(2);
  });

  it('is refused at construction for windows under an hour, and for other algorithms, saying why', () => {
    const store = pgQuotaStore({ pool: database() });
    const build = (window: Duration, algorithm: 'fixed-window' | 'gcra' = 'fixed-window') =>
      createLimiter({ defaultStore: store, limits: [{ name: 'q', purpose: 'shedding', algorithm, limit: 1000, window, key: 'principal' }] });
    let error: unknown;
    try {
      build('59m');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('RC_UNSUPPORTED_STORE');
    expect((error as ConfigError).option).toBe('limits[0].store (the default store)');
    expect((error as ConfigError).message).toMatch(/under the store's minimum of 3600000 ms \(1 hour\): a database in the request path of every call makes the checking the DoS/);
    expect(() => build('1h', 'gcra')).toThrow(/fixed-window quotas only .* not gcra/);
    expect(() => build('1h')).not.toThrow();
    expect(() => build('30d')).not.toThrow();
    expect(MIN_QUOTA_WINDOW_MS).toBe(3_600_000);
    // A named store is refused the same way, naming the limit's store option.
    expect(() => createLimiter({ stores: { billing: store }, limits: [{ name: 'q', purpose: 'shedding', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'principal', store: 'billing' }] })).toThrow(/^limits\[0\]\.store: limit "q" cannot be held by store "billing" \(pg\)/);
  });

  it('writes increments in one statement per flush, at flushUnits or flushMs, and reads through the cache', async () => {
    const table = await freshTable();
    const counted = counting(database());
    const store = pgQuotaStore({ pool: counted, table, flushUnits: 10, flushMs: 60_000, cacheMs: 60_000 });
    const limiter = createLimiter({ defaultStore: store, limits: [{ name: 'm', purpose: 'shedding', algorithm: 'fixed-window', limit: 1000, window: '30d', key: 'principal' }] });
    for (let i = 0; i < 9; i++) expect((await limiter.check({ principal: 'a' })).allowed).toBe(true);
    // ready() probed the table; the first check read the key's total once (a cache miss); 9 units are unflushed.
    expect(counted.statements).toEqual(['READY', 'SELECT']);
    // The 10th reaches flushUnits: one INSERT ... ON CONFLICT for the key.
    expect((await limiter.check({ principal: 'a' })).allowed).toBe(true);
    await store.flush();
    expect(counted.statements).toEqual(['READY', 'SELECT', 'INSERT']);
    const { rows } = await database().query(`SELECT used FROM ${table}`);
    expect(rows).toEqual([{ used: '10' }]);
    // Several keys: one statement for all of them.
    for (const k of ['b', 'c', 'd']) await limiter.check({ principal: k });
    await store.flush();
    expect(counted.statements.slice(3)).toEqual(['SELECT', 'SELECT', 'SELECT', 'INSERT']);
    expect((await database().query(`SELECT count(*)::int AS n, sum(used)::int AS total FROM ${table}`)).rows).toEqual([{ n: 4, total: 13 }]);
    await store.close();
    await limiter.close();
  });

  it("sees another process's units once its cache is cacheMs old", async () => {
    const table = await freshTable();
    const limit = compileLimit({ name: 'm', purpose: 'shedding', algorithm: 'fixed-window', limit: 100, window: '1h' }, 'limits[0]', new Set());
    const op = { spec: limit, key: 'tenant', cost: 10, leaseId: undefined };
    const a = pgQuotaStore({ pool: database(), table, cacheMs: 150 });
    const b = pgQuotaStore({ pool: database(), table, cacheMs: 150 });
    const now = Date.now();
    expect((await b.evaluate([{ ...op, cost: 0 }], now))[0]?.remaining).toBe(100);
    await a.evaluate([op], now);
    await a.flush();
    // Within cacheMs, b answers from its cache; after it, from the database.
    expect((await b.evaluate([{ ...op, cost: 0 }], now))[0]?.remaining).toBe(100);
    await new Promise((r) => setTimeout(r, 200));
    expect((await b.evaluate([{ ...op, cost: 0 }], now))[0]?.remaining).toBe(90);
    await Promise.all([a.close(), b.close()]);
  });
});

interface WorkerRun {
  readonly admitted: number;
  readonly done: boolean;
  readonly signal: NodeJS.Signals | null;
}

function worker(options: Record<string, unknown>): Promise<WorkerRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'quota-worker.ts'), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let admitted = 0;
  let done = false;
  let stderr = '';
  let buffered = '';
  child.stdout.on('data', (d: Buffer) => {
    buffered += d.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      const m = JSON.parse(line) as { admitted: number; done?: boolean };
      admitted = Math.max(admitted, m.admitted);
      if (m.done === true) done = true;
    }
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code !== 0 && signal !== 'SIGKILL') reject(new Error(`quota worker exited ${String(code ?? signal)}: ${stderr}`));
      else resolve({ admitted, done, signal });
    });
  });
}

describe('pg quota store: the bound with several processes', () => {
  const N = 600;
  const F = 40;
  const base = { port: PG_PORT, database: PG_DATABASE, user: PG_USER, limit: N, flushUnits: F, flushMs: 100, cacheMs: 50, attempts: 500, inFlight: 4 };

  it('k = 3 processes admit at least N and at most N + (k - 1) x flushUnits; the table holds exactly what they admitted', async () => {
    const table = await freshTable();
    const runs = await Promise.all([0, 1, 2].map(() => worker({ ...base, table })));
    expect(runs.every((r) => r.done)).toBe(true);
    const admitted = runs.reduce((s, r) => s + r.admitted, 0);
    expect(admitted).toBeGreaterThanOrEqual(N);
    expect(admitted).toBeLessThanOrEqual(N + 2 * F);
    const { rows } = await database().query(`SELECT sum(used)::int AS total FROM ${table}`);
    expect(rows[0]).toEqual({ total: admitted });
  }, 60_000);

  it('a process killed with units unflushed loses at most flushUnits of them, all in the direction of admitting more: at most N + (k - 1 + crashes) x flushUnits', async () => {
    const table = await freshTable();
    // The crashing process admits 25 (< F: none flushed by count) and dies before its first timed flush could matter much.
    const runs = await Promise.all([worker({ ...base, table, crashAfter: 25, flushMs: 60_000 }), worker({ ...base, table }), worker({ ...base, table })]);
    const [crashed, ...survivors] = runs as [WorkerRun, ...WorkerRun[]];
    expect(crashed.signal).toBe('SIGKILL');
    expect(crashed.admitted).toBe(25);
    expect(survivors.every((r) => r.done)).toBe(true);
    const admitted = runs.reduce((s, r) => s + r.admitted, 0);
    const { rows } = await database().query(`SELECT coalesce(sum(used), 0)::int AS total FROM ${table}`);
    const counted = (rows[0] as { total: number }).total;
    const lost = admitted - counted;
    // The crash lost what it had not flushed: never more than flushUnits, never a unit counted that was not admitted.
    expect(lost).toBe(crashed.admitted);
    expect(lost).toBeLessThanOrEqual(F);
    expect(admitted).toBeLessThanOrEqual(N + (3 - 1 + 1) * F);
    expect(counted).toBeLessThanOrEqual(N + 2 * F);
  }, 60_000);
});
