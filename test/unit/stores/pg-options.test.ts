import { describe, expect, it } from 'vitest';
import { ConfigError, type Duration } from '../../../packages/ratecontract/src/index.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { MIN_QUOTA_WINDOW_MS, PG_QUOTA_STORE_DEFAULTS, pgQuotaMigration, pgQuotaStore, type PgQuotaStoreOptions } from '../../../packages/ratecontract/src/stores/pg/index.js';

const pool = { query: () => Promise.resolve({ rows: [] }) };

function refused(options: unknown): ConfigError {
  try {
    pgQuotaStore(options as PgQuotaStoreOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('not refused');
}

describe('pgQuotaStore options', () => {
  it('has the documented defaults', () => {
    const s = pgQuotaStore({ pool });
    expect(s.kind).toBe('pg');
    expect([s.table, s.flushMs, s.flushUnits, s.cacheMs, s.queryTimeoutMs, s.deadlineMs]).toEqual([
      PG_QUOTA_STORE_DEFAULTS.table,
      PG_QUOTA_STORE_DEFAULTS.flushMs,
      PG_QUOTA_STORE_DEFAULTS.flushUnits,
      PG_QUOTA_STORE_DEFAULTS.cacheMs,
      PG_QUOTA_STORE_DEFAULTS.queryTimeoutMs,
      PG_QUOTA_STORE_DEFAULTS.deadlineMs,
    ]);
  });

  it.each([
    [undefined, 'pgQuotaStore', /options object/],
    [{}, 'pgQuotaStore.pool', /is required/],
    [{ pool: {} }, 'pgQuotaStore.pool', /is required/],
    [{ pool, table: 'Quota; DROP TABLE x' }, 'pgQuotaStore.table', /lower-case SQL identifier/],
    [{ pool, table: 'a.b.c' }, 'pgQuotaStore.table', /schema-qualified/],
    [{ pool, flushMs: 0 }, 'pgQuotaStore.flushMs', /positive number of ms/],
    [{ pool, flushUnits: 1.5 }, 'pgQuotaStore.flushUnits', /positive integer/],
    [{ pool, cacheMs: -1 }, 'pgQuotaStore.cacheMs', /positive/],
    [{ pool, queryTimeoutMs: 'x' }, 'pgQuotaStore.queryTimeoutMs', /got string/],
    [{ pool, deadlineMs: Infinity }, 'pgQuotaStore.deadlineMs', /positive/],
    [{ pool, keySecret: '' }, 'pgQuotaStore.keySecret', /non-empty/],
    [{ pool, flushUnit: 5 }, 'pgQuotaStore.flushUnit', /unknown option "flushUnit".*flushUnits/],
  ])('refuses %j, naming %s', (options, option, message) => {
    const e = refused(options);
    expect(e.option).toBe(option);
    expect(e.message).toMatch(message);
  });

  it('accepts fixed windows of an hour or more, plans included; refuses the rest with the reason', () => {
    const s = pgQuotaStore({ pool });
    const limit = (window: Duration, algorithm: 'fixed-window' | 'sliding-window' = 'fixed-window', extra = {}) =>
      compileLimit({ name: 'q', purpose: 'shedding', algorithm, limit: 10, window, ...extra }, 'limits[0]', new Set());
    expect(s.accepts(limit('1h'))).toBeUndefined();
    expect(s.accepts(limit('30d'))).toBeUndefined();
    expect(s.accepts(limit(3_599_999))).toMatch(/the checking the DoS/);
    expect(s.accepts(limit('1h', 'sliding-window'))).toMatch(/fixed-window quotas only/);
    expect(s.accepts(limit('1d', 'fixed-window', { key: 'principal', plan: () => 'free', plans: { free: { window: '1m' } } }))).toMatch(/\(60000 ms\) is under/);
    expect(MIN_QUOTA_WINDOW_MS).toBe(3_600_000);
  });

  it('the migration creates one table and its expiry index, named as asked', () => {
    expect(pgQuotaMigration()).toMatch(/^CREATE TABLE IF NOT EXISTS ratecontract_quota \(/);
    expect(pgQuotaMigration('billing.quota')).toContain('CREATE INDEX IF NOT EXISTS billing_quota_expires_at ON billing.quota (expires_at);');
    expect(() => pgQuotaMigration('bad name')).toThrow(/pgQuotaMigration\(table\)/);
  });
});
