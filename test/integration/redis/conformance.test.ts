/**
 * The exported store conformance suite (ratecontract/testing) against the
 * memory store, the Redis store on a standalone server and on a 3-master
 * Cluster, with ioredis and node-redis. Redis runs in client-time mode so the
 * suite's manual clock drives it: decisions must equal the reference exactly.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryStore } from '../../../packages/ratecontract/src/index.js';
import { redisStore, keySlot } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { describeStoreConformance } from '../../../packages/ratecontract/src/testing/index.js';
import { connectCluster, connectStandalone, type Flavour, type TestClient } from './helpers/clients.js';
import { redisCli, startCluster, startRedis, type RedisClusterServers, type RedisServer } from './helpers/redis-server.js';

let server: RedisServer | undefined;
let cluster: RedisClusterServers | undefined;
const clients = new Map<string, TestClient>();

beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedis(), startCluster()]);
  for (const flavour of ['ioredis', 'node-redis'] as const) {
    clients.set(`standalone ${flavour}`, await connectStandalone(flavour, server.port));
    clients.set(`cluster ${flavour}`, await connectCluster(flavour, cluster.ports));
  }
}, 60_000);

afterAll(async () => {
  await Promise.all([...clients.values()].map((c) => c.close()));
  await Promise.all([server?.stop(), cluster?.stop()]);
}, 30_000);

function clientFor(name: string): TestClient {
  const c = clients.get(name);
  if (c === undefined) throw new Error(`no client ${name}`);
  return c;
}

describeStoreConformance('memory', { createStore: () => memoryStore() }, { describe, it });

for (const topology of ['standalone', 'cluster'] as const) {
  for (const flavour of ['ioredis', 'node-redis'] as const satisfies readonly Flavour[]) {
    const name = `${topology} ${flavour}`;
    describeStoreConformance(
      `redis ${name} (client time)`,
      {
        createStore: () => {
          const store = redisStore({ client: clientFor(name).client, prefix: `conf:${randomBytes(4).toString('hex')}:`, timeMode: 'client', ttlGraceMs: 600_000 });
          expect(store.clientInfo).toEqual({ flavour, cluster: topology === 'cluster' });
          return store;
        },
      },
      { describe, it },
    );
  }
}

describe('cluster key layout', () => {
  it('computes the same hash slot as the server (CLUSTER KEYSLOT), hash tags included', async () => {
    const port = cluster?.ports[0] as number;
    const store = redisStore({ client: clientFor('cluster ioredis').client });
    const keys = [store.keyFor('otp:gcra', '+15550001'), store.keyFor('ip:fixed-window', '203.0.113.9'), 'rc:{tenant-7}:x', 'a{}b', '{}', 'ключ{ü}', ''];
    for (const key of keys) {
      expect(keySlot(key)).toBe(Number((await redisCli(port, 'cluster', 'keyslot', key)).trim()));
    }
  });

  it('a hash tag in the prefix keeps a whole chain in one slot (one script, atomic)', () => {
    const store = redisStore({ client: clientFor('cluster ioredis').client, prefix: 'rc:{limits}:' });
    const slots = new Set(['a', 'b', 'c', 'd'].map((k, i) => keySlot(store.keyFor(`l${i}:gcra`, k))));
    expect(slots.size).toBe(1);
  });
});
