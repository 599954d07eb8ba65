/**
 * Measures the Redis memory one limit key takes, per algorithm, through the
 * real Redis store: used_memory before and after 50,000 distinct keys, over
 * the key count. The figures feed `keySlots` in `audit` (src/config/audit.ts,
 * REDIS_BYTES_PER_KEY). Needs redis-server on PATH; uses a free port.
 *
 *   npx tsx scripts/measure-key-bytes.ts [--keys 50000]
 */
import { Redis } from 'ioredis';
import { createLimiter } from '../src/index.js';
import { redisStore } from '../src/stores/redis/index.js';
import type { AlgorithmName } from '../src/algorithms/types.js';
import { redisCli, startRedis } from '../test/redis/helpers/redis-server.js';

const at = process.argv.indexOf('--keys');
const KEYS = at > 0 ? Number(process.argv[at + 1]) : 50_000;
const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra', 'sliding-log', 'concurrency'];

async function usedMemory(port: number): Promise<number> {
  const info = await redisCli(port, 'info', 'memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

const server = await startRedis();
const client = new Redis(server.port, '127.0.0.1', { lazyConnect: false });
try {
  console.log(`| algorithm | bytes per key, 1 request held | bytes per key, N = 10 held |\n| --- | --- | --- |`);
  for (const algorithm of ALGORITHMS) {
    await redisCli(server.port, 'flushall');
    const limiter = createLimiter({
      store: redisStore({ client, deadlineMs: 2000 }),
      limits: [{ name: 'm', purpose: 'abuse', algorithm, limit: 10, window: '10m', key: 'principal' }],
    });
    const perKey = async (tag: string, requests: number): Promise<number> => {
      const before = await usedMemory(server.port);
      for (let i = 0; i < KEYS; i += 500) {
        for (let r = 0; r < requests; r++) await Promise.all(Array.from({ length: 500 }, (_, j) => limiter.check({ principal: `${tag}-${i + j}` })));
      }
      return Math.round(((await usedMemory(server.port)) - before) / KEYS);
    };
    const one = await perKey('one', 1);
    const full = await perKey('full', 10);
    console.log(`| ${algorithm} | ${one} | ${full} |`);
    limiter.close();
  }
} finally {
  client.disconnect();
  await server.stop();
}
