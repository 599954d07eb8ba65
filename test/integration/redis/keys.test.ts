/**
 * What the store leaves in Redis: every key has a TTL no longer than its
 * state's useful life, keys whose state is spent are deleted, and no raw
 * user identifier ever appears in a key or a value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { algorithms, createLimiter, memoryStore, type AlgorithmName, type LimitDefinition, type Store } from '../../../packages/ratecontract/src/index.js';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { decodeState } from '../../../packages/ratecontract/src/stores/redis/state-codec.js';
import { useStandaloneIoredis } from './helpers/clients.js';
import type { Redis } from 'ioredis';

const ioredis = useStandaloneIoredis({ beforeAll, afterAll });

const RAW = ['alice@example.com', '203.0.113.77', '+15550001234', 'tenant-acme'];

const LIMITS: LimitDefinition[] = [
  { name: 'k-fixed', purpose: 'abuse', algorithm: 'fixed-window', limit: 3, window: '2s', key: 'principal' },
  { name: 'k-swin', purpose: 'abuse', algorithm: 'sliding-window', limit: 5, window: '1s', key: 'principal' },
  { name: 'k-log', purpose: 'abuse', algorithm: 'sliding-log', limit: 4, window: '3s', key: 'header.x-phone' },
  { name: 'k-token', purpose: 'shedding', algorithm: 'token-bucket', limit: 2, window: '1s', burst: 6, key: 'header.x-tenant' },
  { name: 'k-leaky', purpose: 'shedding', algorithm: 'leaky-bucket', limit: 5, window: '1s', burst: 4, mode: 'queue', key: 'ip' },
  { name: 'k-gcra', purpose: 'shedding', algorithm: 'gcra', limit: 7, window: '10s', burst: 3, key: 'ip', countRejected: true },
  { name: 'k-conc', purpose: 'shedding', algorithm: 'concurrency', limit: 3, window: '5s', key: 'ip', shadow: true },
];

/** TIME, PTTL and the value of a key, read atomically. */
const READ = "local t = redis.call('TIME') return { tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), redis.call('PTTL', KEYS[1]), redis.call('TYPE', KEYS[1]).ok }";

async function scanAll(client: Redis, match: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', match, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

describe('keys in Redis (server time)', () => {
  it('every key has a TTL within its useful life; spent states are deleted; raw keys never appear', async () => {
    const client = ioredis().client as Redis;
    const store = redisStore({ client, prefix: 'kt:', deadlineMs: 2000 });
    const limiter = createLimiter({ limits: LIMITS, defaultStore: store });
    try {
      const held: Array<() => Promise<void>> = [];
      for (let round = 0; round < 6; round++) {
        for (const who of RAW) {
          const d = await limiter.check({ ip: who, principal: who, headers: { 'x-phone': who, 'x-tenant': who } }, { cost: 1 + (round % 2) });
          expect(d.results.every((r) => r.source === 'store')).toBe(true);
          held.push(() => d.release());
        }
      }
      await store.heartbeat('replica-1', 15_000, 0);

      const keys = await scanAll(client, 'kt:*');
      expect(keys.length).toBeGreaterThan(LIMITS.length);
      for (const key of keys) {
        for (const raw of RAW) expect(key).not.toContain(raw);
        const [now, pttl, type] = (await client.eval(READ, 1, key)) as [number, number, string];
        expect(pttl, key).toBeGreaterThan(0);
        if (key === 'kt:replicas') {
          expect(type).toBe('zset');
          expect(pttl).toBeLessThanOrEqual(15_000);
          continue;
        }
        const value = (await client.getBuffer(key)) as Buffer;
        for (const raw of RAW) expect(value.includes(raw)).toBe(false);
        const limit = LIMITS.find((l) => key.startsWith(`kt:${l.name}:`));
        expect(limit, key).toBeDefined();
        const def = limit as LimitDefinition;
        const algorithm = def.algorithm as AlgorithmName;
        const compiled = limiter.limits.find((l) => l.name === def.name);
        const state = decodeState(algorithm, value);
        const life = algorithms[algorithm].expiresAt(state, compiled?.params as never) - now;
        // The TTL was set within the same millisecond as the state's `now` (1 ms of TIME truncation).
        expect(pttl, `${key} = ${JSON.stringify(state)}`).toBeLessThanOrEqual(life + 1);
      }

      // Releasing every lease deletes the concurrency keys: their state is empty.
      for (const release of held) await release();
      const leaseKeys = await scanAll(client, 'kt:k-conc:*');
      expect(leaseKeys).toEqual([]);
    } finally {
      await limiter.close();
    }
  });

  it('a refund that empties a state deletes the key', async () => {
    const client = ioredis().client as Redis;
    const store = redisStore({ client, prefix: 'kr:' });
    const limiter = createLimiter({
      limits: [{ name: 'r-token', purpose: 'shedding', algorithm: 'token-bucket', limit: 1, window: '1h', key: 'ip' }],
      defaultStore: store,
    });
    const [limit] = limiter.limits;
    const op = { spec: limit as NonNullable<typeof limit>, key: '198.51.100.1', cost: 1, leaseId: undefined };
    await store.evaluate([op], 0);
    expect(await scanAll(client, 'kr:*')).toHaveLength(1);
    await store.refund([op], 0);
    expect(await scanAll(client, 'kr:*')).toEqual([]);
    await limiter.close();
  });

  it('when another store rejects, the limiter refund gives back at the instant Redis decided (server time)', async () => {
    const client = ioredis().client as Redis;
    const redis = redisStore({ client, prefix: 'km:', deadlineMs: 2000 });
    // Refunds arrive a few ms after the decision, so the server clock has moved on.
    const store: Store = {
      kind: redis.kind,
      deadlineMs: redis.deadlineMs,
      evaluate: (ops, now) => redis.evaluate(ops, now),
      refund: async (ops, now) => {
        await new Promise((r) => setTimeout(r, 5));
        await redis.refund(ops, now);
      },
      release: (op, now) => redis.release(op, now),
    };
    const limiter = createLimiter({
      limits: [
        // A sliding log can only give back the entry stamped with the decision's own instant.
        { name: 'm-log', purpose: 'abuse', algorithm: 'sliding-log', limit: 5, window: '1h', key: 'ip', store: 'shared' },
        { name: 'm-tight', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1h', key: 'ip' },
      ],
      defaultStore: memoryStore(),
      stores: { shared: store },
      // The limiter's clock is far from the server's: the refund must not use it.
      clock: { now: () => 1_000 },
    });
    try {
      expect((await limiter.check({ ip: '192.0.2.1' })).allowed).toBe(true);
      for (let i = 0; i < 3; i++) {
        const d = await limiter.check({ ip: '192.0.2.1' });
        expect(d.allowed).toBe(false);
        expect(d.results[0]?.source).toBe('store');
      }
      const [key] = await scanAll(client, 'km:*');
      const log = decodeState('sliding-log', (await client.getBuffer(key as string)) as Buffer) as number[];
      // One entry of cost 1: the three rejected requests were all given back.
      expect(log.length).toBe(2);
      expect(log[1]).toBe(1);
    } finally {
      await limiter.close();
    }
  });
});

describe('state keys through the store key cache', () => {
  it('keyFor gives the digest key of stateKey whether the cache hits, fills, or rests (keys that rarely repeat)', async () => {
    const { stateKey } = await import('../../../packages/ratecontract/src/stores/redis/keys.js');
    const store = redisStore({ client: ioredis().client, prefix: 'kc:', keySecret: 's3cret' });
    let wrong = 0;
    let compared = 0;
    const expectKey = (limitId: string, k: string): void => {
      compared++;
      // Compared cheaply in the loop; the first mismatch is reported below.
      if (store.keyFor(limitId, k) !== stateKey('kc:', limitId, k, 's3cret') && wrong++ === 0) expect(store.keyFor(limitId, k), `keyFor(${limitId}, ${k})`).toBe(stateKey('kc:', limitId, k, 's3cret'));
    };
    // Hot keys (hits), two limits with the same user key (no mix-up between limits).
    for (let round = 0; round < 3; round++) for (let i = 0; i < 100; i++) for (const id of ['a:gcra', 'b:gcra']) expectKey(id, `hot-${i}`);
    // 30,000 distinct keys twice over: the cache fills, finds few hits, rests, and comes back.
    for (let round = 0; round < 2; round++) for (let i = 0; i < 30_000; i++) expectKey('a:gcra', `k-${i}`);
    for (let i = 0; i < 100; i++) expectKey('b:gcra', `hot-${i}`);
    expect(wrong).toBe(0);
    expect(compared).toBe(600 + 60_000 + 100);
  });
});
