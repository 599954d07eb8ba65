/**
 * Redis Cluster specifics, in server-time mode: a chain whose keys live in
 * different slots is compensated when one slot group rejects; a group that
 * fails makes the whole call fail after the others gave back what they took;
 * an ioredis `keyPrefix` is part of the slot computation.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompiledLimit, type StoreOp } from '../../../packages/ratecontract/src/index.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { keySlot, redisStore, type IoredisLike } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { chainScript, heartbeatScript, refundScript, releaseScript } from '../../../packages/ratecontract/src/stores/redis/scripts.generated.js';
import { conformanceCases, runConformanceCase } from '../../../packages/ratecontract/src/testing/index.js';
import { connectCluster, connectStandalone, type TestClient } from './helpers/clients.js';
import { redisCli, startCluster, startRedis, type RedisClusterServers, type RedisServer } from './helpers/redis-server.js';

let cluster: RedisClusterServers | undefined;
let server: RedisServer | undefined;
const clients: TestClient[] = [];

beforeAll(async () => {
  [cluster, server] = await Promise.all([startCluster(), startRedis()]);
  clients.push(await connectCluster('ioredis', cluster.ports), await connectCluster('node-redis', cluster.ports));
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all([cluster?.stop(), server?.stop()]);
}, 30_000);

function limit(name: string, algorithm: 'gcra' | 'fixed-window', n: number): CompiledLimit {
  return compileLimit({ name, purpose: 'shedding', algorithm, limit: n, window: '1h' }, 'limits[0]', new Set());
}

describe.each(['ioredis', 'node-redis'] as const)('Cluster with %s (server time)', (flavour) => {
  it('a chain across slots admits all-or-nothing: the admitting slot gives back what it took', async () => {
    const client = (clients.find((c) => c.flavour === flavour) as TestClient).client;
    const store = redisStore({ client, prefix: `cl:${randomBytes(4).toString('hex')}:` });
    const wide = limit('wide', 'gcra', 5);
    const tight = limit('tight', 'fixed-window', 1);
    const ops = (): StoreOp[] => [
      { spec: wide, key: 'user-1', cost: 1, leaseId: undefined },
      { spec: tight, key: 'user-1', cost: 1, leaseId: undefined },
    ];
    expect(keySlot(store.keyFor(wide.id, 'user-1'))).not.toBe(keySlot(store.keyFor(tight.id, 'user-1')));
    const first = await store.evaluate(ops(), 0);
    expect(first.map((r) => [r.allowed, r.consumed, r.remaining])).toEqual([
      [true, true, 4],
      [true, true, 0],
    ]);
    for (let i = 0; i < 3; i++) {
      const again = await store.evaluate(ops(), 0);
      // wide admits but, the chain being rejected, consumes nothing and reports the unconsumed figures.
      expect(again.map((r) => [r.allowed, r.consumed, r.remaining])).toEqual([
        [true, false, 4],
        [false, false, 0],
      ]);
    }
  });
});

describe.each(['ioredis', 'node-redis'] as const)('preload on a Cluster with %s', (flavour) => {
  it('loads every script on every master', async () => {
    const ports = (cluster as RedisClusterServers).ports;
    await Promise.all(ports.map((p) => redisCli(p, 'script', 'flush')));
    await redisStore({ client: (clients.find((c) => c.flavour === flavour) as TestClient).client }).preload();
    const shas = [chainScript, refundScript, releaseScript, heartbeatScript].map((s) => s.sha1);
    for (const p of ports) expect((await redisCli(p, 'script', 'exists', ...shas)).replace(/\s+/g, '')).toBe('1111');
  });
});

describe('slot groups (standalone server addressed as a Cluster)', () => {
  /** An ioredis client whose scripts fail for keys of the limit named `boom`. */
  function failing(inner: Redis): IoredisLike {
    const fails = (keys: string[]): boolean => keys.some((k) => k.includes(':boom:'));
    return {
      isCluster: true,
      evalsha: (sha, numKeys, ...rest) => (fails(rest.slice(0, numKeys)) ? Promise.reject(new Error('LOADING simulated')) : inner.evalsha(sha, numKeys, ...rest)),
      eval: (text, numKeys, ...rest) => (fails(rest.slice(0, numKeys)) ? Promise.reject(new Error('LOADING simulated')) : inner.eval(text, numKeys, ...rest)),
    };
  }

  it('a failing group fails the call, after the groups that admitted gave back what they took', async () => {
    const io = await connectStandalone('ioredis', (server as RedisServer).port);
    try {
      const store = redisStore({ client: failing(io.client as Redis), prefix: 'grp:' });
      expect(store.clientInfo.cluster).toBe(true);
      const ok = limit('ok', 'gcra', 3);
      const boom = limit('boom', 'gcra', 3);
      const op = (l: CompiledLimit): StoreOp => ({ spec: l, key: 'k', cost: 1, leaseId: undefined });
      await expect(store.evaluate([op(ok), op(boom)], 0)).rejects.toThrow('LOADING simulated');
      expect(await (io.client as Redis).keys('grp:*')).toEqual([]);
      const alone = await store.evaluate([op(ok)], 0);
      expect(alone[0]?.remaining).toBe(2);
    } finally {
      await io.close();
    }
  });

  it('an ioredis keyPrefix on a Cluster client is part of the slot computation', async () => {
    const ports = (cluster as RedisClusterServers).ports;
    const prefixed = new Cluster(
      ports.map((port) => ({ host: '127.0.0.1', port })),
      // '{}' first makes every full key tagless (hashed whole), although our prefix has a tag.
      { keyPrefix: '{}', lazyConnect: true },
    );
    await prefixed.connect();
    try {
      const chain = conformanceCases.find((c) => c.name.startsWith('chain of every algorithm'));
      expect(chain).toBeDefined();
      const store = redisStore({ client: prefixed, prefix: `kp:{${randomBytes(3).toString('hex')}}:`, timeMode: 'client', ttlGraceMs: 600_000 });
      await runConformanceCase(chain as NonNullable<typeof chain>, store);
    } finally {
      await prefixed.quit();
    }
  });
});
