import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, redisCli, startRedis, type RedisServer } from '../redis/helpers/redis-server.js';
import { serve } from './helpers.js';

function otp(url: string, phone: string, ip: string): Promise<Response> {
  return fetch(`${url}/otp/send`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': ip }, body: JSON.stringify({ phone }) });
}

describe('ratecontract serve --redis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    // The first test stops it; stopping again is harmless.
    await redis?.stop().catch(() => undefined);
  });

  it('runs the demo contract on Redis: waits for the stores, decides there, and keeps answering through an outage', async () => {
    const s = await serve(['--redis', redis.url, '--port', '0', '--admin-port', '0']);
    try {
      const stores = s.logs.filter((l) => l.event === 'store');
      // One line per store, in the order the stores became ready (not the file's).
      expect(stores.filter((l) => l.type === 'redis').map((l) => [l.store, l.ready]).sort()).toEqual([
        ['abuse', true],
        ['shared', true],
      ]);
      // The stores' lines come before the startup line: it listened once they were ready.
      expect(s.logs.findIndex((l) => l.event === 'startup')).toBeGreaterThan(s.logs.findIndex((l) => l.store === 'shared'));
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await otp(s.url, '+15550300', '203.0.113.30')).status);
      expect(statuses).toEqual([202, 202, 202, 429]);
      expect(Number((await redisCli(redis.port, 'DBSIZE')).trim())).toBeGreaterThan(0);
      expect((await fetch(`${s.adminUrl}/readyz`)).status).toBe(200);

      await redis.stop();
      // Redis is gone: every request is still answered, by the fail modes (closed abuse limits decide locally for failClosedAfter, then 503; degraded search: local).
      const during: number[] = [];
      for (let i = 0; i < 20; i++) during.push((await otp(s.url, `+1555031${String(i).padStart(2, '0')}`, `203.0.114.${i}`)).status);
      expect(during.filter((c) => c !== 202 && c !== 503)).toEqual([]);
      const search = await fetch(`${s.url}/search?q=x`, { headers: { 'x-forwarded-for': '203.0.113.32' } });
      expect(search.status).toBe(200);
      await s.waitForLog((l) => l.event === 'store-error');
      await s.waitForLog((l) => l.event === 'breaker' && l.to === 'open');
      // Store errors are throttled: one line per store and reason in 5 s, however many calls failed.
      const errors = s.logs.filter((l) => l.event === 'store-error').map((l) => `${String(l.store)}:${String(l.reason)}`);
      expect(new Set(errors).size).toBe(errors.length);
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });

  it('with Redis unreachable, listens after --ready-timeout, says so, is not ready, and answers by the fail modes', async () => {
    const port = await freePort();
    const s = await serve(['--redis', `redis://127.0.0.1:${port}`, '--ready-timeout', '300ms', '--port', '0', '--admin-port', '0']);
    try {
      const lines = s.logs.filter((l) => l.event === 'store' && l.type === 'redis');
      expect(lines.map((l) => [l.store, l.ready])).toEqual([
        ['abuse', false],
        ['shared', false],
      ]);
      expect(lines[0]?.waitedMs).toBeGreaterThanOrEqual(290);
      const ready = await fetch(`${s.adminUrl}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ ready: false, stores: { abuse: false, shared: false } });
      expect((await fetch(`${s.adminUrl}/healthz`)).status).toBe(200);
      // The closed abuse limits decide locally until failClosedAfter, then refuse: answered either way, never hung or 500.
      expect([202, 503]).toContain((await otp(s.url, '+15550400', '203.0.113.40')).status);
      expect((await fetch(`${s.url}/health`)).status).toBe(200);
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });
});
