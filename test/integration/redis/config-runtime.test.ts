import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRuntime, parseConfig, type ContractRuntime } from '../../../packages/ratecontract/src/config/index.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

// Moved from test/config/runtime.test.ts: unit tests run without Redis (the lint rule on test/**).
describe('buildRuntime with Redis stores', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  const contract = (url: string): string => `stores:
  shared: { type: redis, url: ${url}, deadline: 50ms, prefix: 'rt:' }
replicas: discover
limits:
  - { name: a, purpose: shedding, limit: 10, window: 1m, key: ip, store: shared }
  - { name: b, purpose: shedding, limit: 10, window: 1m, key: ip }
routes:
  - { match: GET /a, limits: [a] }
  - { match: GET /b, limits: [b] }
  - { match: GET /ab, limits: [a, b] }
`;

  it('replicas: discover counts processes, not routes x processes, and state is shared through Redis', async () => {
    const c = parseConfig(contract(redis.url), { file: 'redis.yaml' });
    const runtimes: ContractRuntime[] = [await buildRuntime(c, { heartbeatMs: 20 }), await buildRuntime(c, { heartbeatMs: 20 })];
    try {
      const limiters = runtimes.flatMap((rt) => rt.routes.map((r) => r.limiter));
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline && !limiters.every((l) => l?.replicas === 2)) await new Promise((r) => setTimeout(r, 20));
      expect(limiters.map((l) => l?.replicas)).toEqual([2, 2, 2, 2, 2, 2]);
      // `a` lives in Redis: both runtimes spend one budget of 10.
      let admitted = 0;
      for (let i = 0; i < 12; i++) {
        const rt = runtimes[i % 2] as ContractRuntime;
        if ((await rt.route('GET', '/a')?.value.limiter?.check({ ip: '203.0.113.5' }))?.allowed === true) admitted++;
      }
      expect(admitted).toBe(10);
      expect(runtimes[0]?.stores.get('shared')?.kind).toBe('redis');
    } finally {
      await Promise.all(runtimes.map((rt) => rt.close()));
    }
  });

  it('a store whose client cannot connect fails its limits by their fail mode, never by throwing', async () => {
    const errors: string[] = [];
    const c = parseConfig(contract('redis://127.0.0.1:1').replace('replicas: discover', 'replicas: 2'), { file: 'down.yaml' });
    const rt = await buildRuntime(c, { onRedisError: (name) => errors.push(name) });
    try {
      const d = await rt.route('GET', '/a')?.value.limiter?.check({ ip: '203.0.113.6' });
      expect(d?.allowed).toBe(true);
      expect(d?.outcome).toBe('degraded');
      expect(d?.results[0]?.onError).toBe('degraded');
      expect(errors).toContain('shared');
    } finally {
      await rt.close();
    }
  });
});

