/**
 * `keySlots` on real Redis: standalone and a 3-master Cluster.
 *
 * - Invented keys never make more Redis keys than slots; two stores (two
 *   processes) with the same `keySecret` put a key in the same slot, so they
 *   share its budget; another secret maps keys differently.
 * - Cluster: slot keys take the prefix's hash tag like any key, so a chain
 *   with a hash-tagged prefix stays in one slot, and without a tag the slot
 *   keys spread over the masters and decide like the memory store.
 * - The bytes per key `audit` uses (REDIS_BYTES_PER_KEY) are at least what
 *   Redis really spends, measured per algorithm from used_memory.
 */
import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type AlgorithmName, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';
import { bytesPerKey } from '../../../packages/cli/src/contract/audit.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { keySlot, redisStore, type RedisClientLike } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { connectStandalone, type TestClient } from './helpers/clients.js';
import { redisCli, startCluster, startRedis, type RedisClusterServers, type RedisServer } from './helpers/redis-server.js';

let server: RedisServer | undefined;
let cluster: RedisClusterServers | undefined;
let io: TestClient | undefined;
let clusterClient: Cluster | undefined;

beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedis(), startCluster()]);
  io = await connectStandalone('ioredis', server.port);
  clusterClient = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })), { lazyConnect: true });
  await clusterClient.connect();
}, 60_000);

afterAll(async () => {
  await io?.close();
  await clusterClient?.quit();
  await Promise.all([server?.stop(), cluster?.stop()]);
}, 30_000);

const client = (): RedisClientLike => (io as TestClient).client;
const tag = (): string => randomBytes(4).toString('hex');

function otp(slots: number | undefined, algorithm: AlgorithmName = 'gcra', limit = 3): LimitDefinition {
  return { name: 'otp', purpose: 'abuse', algorithm, limit, window: '15m', key: 'principal', ...(slots !== undefined && { keySlots: slots }) };
}

async function keysUnder(prefix: string): Promise<string[]> {
  const out = await redisCli((server as RedisServer).port, '--scan', '--pattern', `${prefix}*`);
  return out.split('\n').filter((l) => l !== '');
}

describe('keySlots on a standalone Redis', () => {
  it('5,000 invented keys make at most 64 Redis keys; without keySlots, 5,000', async () => {
    for (const [slots, most] of [
      [64, 64],
      [undefined, 5000],
    ] as const) {
      const prefix = `ks:${tag()}:`;
      const limiter = createLimiter({ defaultStore: redisStore({ client: client(), prefix, deadlineMs: 2000 }), limits: [otp(slots)] });
      for (let i = 0; i < 5000; i += 250) await Promise.all(Array.from({ length: 250 }, (_, j) => limiter.check({ principal: `+1555${i + j}` })));
      const keys = await keysUnder(prefix);
      expect(keys.length).toBeLessThanOrEqual(most);
      expect(keys.length).toBeGreaterThan(most * 0.9);
      await limiter.close();
    }
  });

  it('two processes with one keySecret share a slot\'s budget; the secret decides the mapping', async () => {
    const prefix = `ks:${tag()}:`;
    const make = (secret: string) => createLimiter({ defaultStore: redisStore({ client: client(), prefix, keySecret: secret, deadlineMs: 2000 }), limits: [otp(1024)] });
    const a = make('s3cret');
    const b = make('s3cret');
    // The same key through two limiters (two processes): one budget of 3.
    const seen = [];
    for (let i = 0; i < 6; i++) seen.push((await (i % 2 === 0 ? a : b).check({ principal: '+15550001' })).allowed);
    expect(seen).toEqual([true, true, true, false, false, false]);
    // Slot keys differ by secret: the same 200 keys land on different slot sets.
    const sa = redisStore({ client: client(), prefix, keySecret: 's3cret' });
    const sb = redisStore({ client: client(), prefix, keySecret: 'other' });
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    const differ = keys.filter((k) => sa.slotKey(k, 1024) !== sb.slotKey(k, 1024)).length;
    expect(differ).toBeGreaterThan(190);
    expect(keys.every((k) => sa.slotKey(k, 1024) === redisStore({ client: client(), keySecret: 's3cret' }).slotKey(k, 1024))).toBe(true);
    await a.close();
    await b.close();
  });

  it('the bytes per key audit states are at least what Redis spends, for every algorithm', async () => {
    const algorithms: AlgorithmName[] = ['fixed-window', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra', 'sliding-log', 'concurrency'];
    const keys = 10_000;
    const used = async (): Promise<number> => Number(/used_memory:(\d+)/.exec(await redisCli((server as RedisServer).port, 'info', 'memory'))?.[1]);
    const measured: Record<string, number> = {};
    for (const algorithm of algorithms) {
      const def = otp(undefined, algorithm, 10);
      const limiter = createLimiter({ defaultStore: redisStore({ client: client(), prefix: `kb:${tag()}:`, deadlineMs: 2000 }), limits: [def] });
      // From an empty keyspace each time: the figure is the whole keyspace's memory over its keys (the main hash
      // table's share included), not the jump of one table doubling.
      await redisCli((server as RedisServer).port, 'flushall');
      const before = await used();
      // N requests per key for the states that grow (a full log, a full lease set); one for the fixed-size ones.
      const rounds = algorithm === 'sliding-log' || algorithm === 'concurrency' ? 10 : 1;
      for (let r = 0; r < rounds; r++) {
        for (let i = 0; i < keys; i += 500) await Promise.all(Array.from({ length: 500 }, (_, j) => limiter.check({ principal: `u${i + j}` })));
      }
      measured[algorithm] = ((await used()) - before) / keys;
      await limiter.close();
      expect(measured[algorithm], JSON.stringify(measured)).toBeLessThanOrEqual(bytesPerKey(compileLimit(def, 'limits[0]', new Set())));
      expect(measured[algorithm], JSON.stringify(measured)).toBeGreaterThan(100);
    }
    console.log(`Redis bytes per key at N = 10 held: ${JSON.stringify(measured)}`);
  }, 120_000);
});

describe('keySlots on a Redis Cluster', () => {
  it('with a hash-tagged prefix, a chain\'s slot keys and plain keys share one hash slot', async () => {
    const store = redisStore({ client: clusterClient as Cluster, prefix: 'rc:{otp}:' });
    const limiter = createLimiter({ defaultStore: store, limits: [otp(4096), { name: 'ip', purpose: 'abuse', limit: 10, window: '1m', key: 'ip' }] });
    const slotOf = (limitIndex: number, key: string): number => keySlot(store.keyFor(limiter.limits[limitIndex]?.id as string, key));
    const slotted = store.slotKey('+15550001', 4096);
    expect(slotted).toMatch(/^%\d+$/);
    expect(slotOf(0, slotted)).toBe(slotOf(1, '10.0.0.1'));
    await limiter.close();
  });

  it('without a tag, slot keys spread over the masters, and the limit decides as on the memory store', async () => {
    const prefix = `kc:${tag()}:`;
    const store = redisStore({ client: clusterClient as Cluster, prefix, deadlineMs: 2000 });
    const limiter = createLimiter({ defaultStore: store, limits: [otp(1)] });
    // One slot: the second recipient shares the first one's 3 attempts.
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push((await limiter.check({ principal: `+1555000${i % 2}` })).allowed);
    expect(seen).toEqual([true, true, true, false, false]);
    const spread = createLimiter({ defaultStore: store, limits: [{ ...otp(4096), name: 'otp2' }] });
    const slots = new Set<number>();
    for (let i = 0; i < 300; i++) {
      expect((await spread.check({ principal: `r${i}` })).results[0]?.source).toBe('store');
      slots.add(keySlot(store.keyFor(spread.limits[0]?.id as string, store.slotKey(`r${i}`, 4096))));
    }
    // 300 keys over 16,384 hash slots: well spread (so over all three masters' ranges).
    expect(slots.size).toBeGreaterThan(250);
    expect([...slots].some((s) => s < 5461) && [...slots].some((s) => s > 10922)).toBe(true);
    await limiter.close();
    await spread.close();
  });
});
