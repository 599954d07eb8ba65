/**
 * Smoke test of the Redis store, in the everyday suite: one real
 * redis-server started by the test, one ioredis client. The exported
 * conformance suite (every algorithm's Lua twin against the reference, in
 * client time) and one limiter chain on server time, as an application runs
 * it. The whole Redis suite (Cluster, node-redis, the differential property
 * test, failover, ...) is in test/integration/redis, run by `npm run test:full`.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../../packages/ratecontract/src/index.js';
import { redisStore } from '../../packages/ratecontract/src/stores/redis/index.js';
import { describeStoreConformance } from '../../packages/ratecontract/src/testing/index.js';
import { connectStandalone, type TestClient } from '../integration/redis/helpers/clients.js';
import { redisCli, startRedis, type RedisServer } from '../integration/redis/helpers/redis-server.js';

let server: RedisServer | undefined;
let io: TestClient | undefined;

beforeAll(async () => {
  server = await startRedis();
  io = await connectStandalone('ioredis', server.port);
}, 30_000);

afterAll(async () => {
  await io?.close();
  await server?.stop();
}, 30_000);

function client(): TestClient['client'] {
  if (io === undefined) throw new Error('no Redis client: beforeAll failed');
  return io.client;
}

describeStoreConformance(
  'redis standalone ioredis (client time)',
  { createStore: () => redisStore({ client: client(), prefix: `smoke:${randomBytes(4).toString('hex')}:`, timeMode: 'client', ttlGraceMs: 600_000 }) },
  { describe, it },
);

describe('a limiter chain on Redis (server time)', () => {
  it('admits N, rejects the next with an exact wait, consumes nothing on a rejection, and keeps only hashed keys in Redis', async () => {
    const prefix = `smoke-chain:${randomBytes(4).toString('hex')}:`;
    const limiter = createLimiter({
      defaultStore: redisStore({ client: client(), prefix }),
      limits: [
        { name: 'otp-recipient', purpose: 'abuse', algorithm: 'gcra', limit: 3, window: '15m', key: 'body.phone', reason: 'smoke' },
        { name: 'otp-global', purpose: 'shedding', algorithm: 'token-bucket', limit: 100, window: '1s', burst: 100, key: 'global', reason: 'smoke' },
      ],
    });
    const ctx = { ip: '203.0.113.7', body: { phone: '+15550100' } };
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.check(ctx));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    const rejected = decisions[3];
    expect(rejected?.limitName).toBe('otp-recipient');
    expect(rejected?.status).toBe(429);
    // GCRA at 3 per 15 min: the next one fits one emission interval (5 min) after the first, give or take the round trips.
    expect(rejected?.retryAfterMs).toBeGreaterThan(290_000);
    expect(rejected?.retryAfterMs).toBeLessThanOrEqual(300_000);
    // Another recipient is admitted: the rejections took nothing from the global bucket beyond the 3 admitted.
    const other = await limiter.check({ ip: '203.0.113.8', body: { phone: '+15550199' } });
    expect(other.allowed).toBe(true);
    const keys = (await redisCli(server?.port as number, '--scan', '--pattern', `${prefix}*`)).trim().split('\n').filter((k) => k !== '');
    expect(keys.length).toBeGreaterThan(0);
    for (const k of keys) expect(k).not.toContain('+1555');
  });
});
