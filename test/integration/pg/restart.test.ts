/**
 * The PostgreSQL quota store through a PostgreSQL restart under load, on a
 * private server (helpers.ts: initdb in a temp dir; the machine's shared
 * server is never restarted), down for a second: no check throws, checks during the outage get
 * their limit's fail mode, the store decides again after it, and the units
 * admitted before the outage but not yet written are written after it
 * (never fewer; a flush whose commit was cut off may count twice).
 */
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLimiter, type Decision } from '../../../packages/ratecontract/src/index.js';
import { pgQuotaMigration, pgQuotaStore } from '../../../packages/ratecontract/src/stores/pg/index.js';
import { pool, startPrivatePostgres, type PrivatePostgres } from './helpers.js';

let server: PrivatePostgres | undefined;
let db: pg.Pool | undefined;

beforeAll(async () => {
  server = await startPrivatePostgres();
  db = pool(server.port, 4);
  await db.query(pgQuotaMigration());
}, 60_000);

afterAll(async () => {
  await db?.end();
  await server?.stop();
}, 30_000);

it('decides through a restart: fail modes during it, the store after it, and no admitted unit left unwritten', async () => {
  const p = db as pg.Pool;
  const F = 20;
  const store = pgQuotaStore({ pool: p, flushUnits: F, flushMs: 100, cacheMs: 200, queryTimeoutMs: 1000, deadlineMs: 1000 });
  const limiter = createLimiter({
    defaultStore: store,
    limits: [
      { name: 'monthly', purpose: 'shedding', algorithm: 'fixed-window', limit: 1_000_000, window: '30d', key: 'principal', onError: 'open' },
      { name: 'daily', purpose: 'abuse', algorithm: 'fixed-window', limit: 1_000_000, window: '1d', key: 'principal', onError: 'closed' },
    ],
  });
  await store.ready();
  const decisions: Array<{ at: number; d: Decision }> = [];
  const errors: unknown[] = [];
  let stop = false;
  const started = Date.now();
  const lane = async (lane: number): Promise<void> => {
    for (let i = 0; !stop; i++) {
      try {
        decisions.push({ at: Date.now() - started, d: await limiter.check({ principal: `tenant-${(lane * 7 + i) % 10}` }) });
      } catch (error) {
        errors.push(error);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  const lanes = [0, 1, 2, 3].map((i) => lane(i));
  await new Promise((r) => setTimeout(r, 800));
  const restartAt = Date.now() - started;
  await (server as PrivatePostgres).restart(1000);
  const backAt = Date.now() - started;
  await new Promise((r) => setTimeout(r, 2500));
  stop = true;
  await Promise.all(lanes);
  await store.close();
  await limiter.close();

  expect(errors).toEqual([]);
  const fromStore = (d: Decision): boolean => d.results.every((r) => r.source === 'store');
  const before = decisions.filter((x) => x.at < restartAt);
  const after = decisions.filter((x) => x.at > backAt + 1500);
  expect(before.length).toBeGreaterThan(20);
  expect(before.every((x) => fromStore(x.d))).toBe(true);
  // The outage: some checks were decided by the fail modes (open, and closed on a local limiter), none by the store.
  const failed = decisions.filter((x) => !fromStore(x.d));
  expect(failed.length).toBeGreaterThan(0);
  for (const x of failed) expect(x.d.results.map((r) => r.onError)).toEqual(['open', 'closed']);
  // Recovered: the store decides again.
  expect(after.length).toBeGreaterThan(20);
  expect(after.every((x) => fromStore(x.d))).toBe(true);
  // Every unit the store admitted is in the table (each check counts 1 in each of the two limits).
  const admitted = decisions.filter((x) => fromStore(x.d) && x.d.allowed).length;
  const { rows } = await p.query(`SELECT limit_id, sum(used)::int AS total FROM ratecontract_quota GROUP BY limit_id ORDER BY limit_id`);
  expect(rows.length).toBe(2);
  for (const row of rows as Array<{ total: number }>) {
    expect(row.total).toBeGreaterThanOrEqual(admitted);
    expect(row.total).toBeLessThanOrEqual(admitted + F * 10);
  }
}, 60_000);
