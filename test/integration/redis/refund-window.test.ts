/**
 * A give-back on Redis goes into the window its cost was counted in, on the
 * store's clock (server time): a `count: 'failures'` success settled after
 * the window rolled over leaves the new window alone, and a chain
 * compensation across two stores gives back exactly what it took. The
 * limiter carries each result's `decidedAt` into the op it gives back; the
 * store keeps no per-op record of its own (one was a WeakMap whose table
 * held 4 MB after a fault, test/faults/network-partition.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, memoryStore } from '../../../packages/ratecontract/src/index.js';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { connectStandalone, type Flavour, type TestClient } from './helpers/clients.js';
import { redisCli, startRedis, type RedisServer } from './helpers/redis-server.js';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.stop();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Ms until the server clock passes the next multiple of `w`, plus a margin. */
async function untilNextWindow(w: number): Promise<number> {
  const [s, us] = (await redisCli(server.port, 'TIME')).trim().split(/\s+/).map(Number) as [number, number];
  const now = s * 1000 + Math.floor(us / 1000);
  return w - (now % w) + 30;
}

describe.each<Flavour>(['ioredis', 'node-redis'])('a give-back on Redis, server time (%s)', (flavour) => {
  let c: TestClient;
  beforeAll(async () => {
    c = await connectStandalone(flavour, server.port);
  });
  afterAll(async () => {
    await c?.close();
  });

  it("a success settled after the window rolled over leaves the new window's count alone", async () => {
    const W = 1000;
    const limiter = createLimiter({
      // Not a test of the deadline: a loaded host must not send a check to its fail mode.
      defaultStore: redisStore({ client: c.client, prefix: `rw:${flavour}:${Date.now()}:`, deadlineMs: 2000 }),
      limits: [{ name: 'login', purpose: 'abuse', algorithm: 'fixed-window', limit: 3, window: W, key: 'principal', count: 'failures', onError: 'closed' }],
    });
    // Start early in a window, so the first check is surely counted in it.
    await sleep(await untilNextWindow(W));
    const first = await limiter.check({ principal: 'p' });
    expect(first.results[0]?.source).toBe('store');
    expect(first.results[0]?.remaining).toBe(2);
    await sleep(await untilNextWindow(W));
    const second = await limiter.check({ principal: 'p' });
    expect(second.results[0]?.remaining, 'a new window').toBe(2);
    // The first attempt succeeds now: its cost goes back into the window it was counted in (gone), not this one.
    await first.settle('success');
    // A peek answers what a check would now: one used in this window, so 1 left after it (2 had the give-back landed here).
    const now = await limiter.peek({ principal: 'p' });
    expect(now.results[0]?.remaining).toBe(1);
    // A success in the same window gives back into it.
    await second.settle('success');
    expect((await limiter.peek({ principal: 'p' })).results[0]?.remaining).toBe(2);
    await limiter.close();
  });

  it('a chain rejected by a second store gives back what the first took, in its window', async () => {
    const W = 1000;
    const limiter = createLimiter({
      defaultStore: redisStore({ client: c.client, prefix: `rw2:${flavour}:${Date.now()}:`, deadlineMs: 2000 }),
      stores: { local: memoryStore() },
      limits: [
        { name: 'api', purpose: 'shedding', algorithm: 'fixed-window', limit: 5, window: W, key: 'principal' },
        { name: 'strict', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1h', key: 'principal', store: 'local' },
      ],
    });
    await sleep(await untilNextWindow(W));
    expect((await limiter.check({ principal: 'q' })).allowed).toBe(true);
    const rejected = await limiter.check({ principal: 'q' });
    expect(rejected.allowed).toBe(false);
    // The rejected check's cost on the Redis limit was given back: one used of 5, so a check now would leave 3 (2 without the give-back).
    const peek = await limiter.peek({ principal: 'q' });
    expect(peek.results.find((r) => r.name === 'api')?.remaining).toBe(3);
    await limiter.close();
  });
});
