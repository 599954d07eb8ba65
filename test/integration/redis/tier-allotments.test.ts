/**
 * Two-tier allotments against a real redis-server, with the system clock: a
 * allotment that ends on a key never checked again goes back by the sweep's
 * timer; `await limiter.close()` resolves only once the unspent units are in
 * Redis again (checked while Redis holds every write back with CLIENT PAUSE);
 * and the sweep's timer never keeps a process alive.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type Duration, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { decodeState } from '../../../packages/ratecontract/src/stores/redis/state-codec.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

let server: RedisServer | undefined;
let client: Redis | undefined;
/** A second connection, as an observer: it reads while the store's connection waits. */
let observer: Redis | undefined;

beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: true });
  observer = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: true });
  await Promise.all([client.connect(), observer.connect()]);
}, 30_000);

afterAll(async () => {
  await client?.quit();
  await observer?.quit();
  await server?.stop();
}, 30_000);

const ALLOTTED = (lifetime: Duration): LimitDefinition => ({
  name: 'tenant',
  purpose: 'shedding',
  algorithm: 'fixed-window',
  limit: 100,
  window: '1h',
  key: 'principal',
  tier: { mode: 'allotment', maxAllotment: 10, allotmentLifetime: lifetime },
});

/** The count the shared fixed-window state holds for `key` (0: no state). */
async function counted(prefix: string, id: string, key: string): Promise<number> {
  const store = redisStore({ client: observer as Redis, prefix });
  const raw = await (observer as Redis).getBuffer(store.keyFor(id, key));
  return raw === null ? 0 : (decodeState('fixed-window', raw) as { c: number }).c;
}

describe('two-tier allotments on a real Redis', () => {
  it('an allotment that ends on a key never checked again is given back by the sweep (no eviction, no other check)', async () => {
    const prefix = `tl:${randomBytes(4).toString('hex')}:`;
    const limiter = createLimiter({ defaultStore: redisStore({ client: client as Redis, prefix }), replicas: 1, limits: [ALLOTTED('100ms')] });
    try {
      // The first check of a key is exact; the second draws an allotment of 10: 11 counted, 9 of them unspent.
      for (let i = 0; i < 2; i++) expect((await limiter.check({ principal: 'quiet' })).allowed).toBe(true);
      const id = limiter.limits[0]?.id as string;
      expect(await counted(prefix, id, 'quiet')).toBe(11);
      // The allotment ends after 100 ms and the sweep ticks every 100 ms: the 9 go back within a few ticks (5 s allowed on a busy machine).
      const until = Date.now() + 5000;
      let now = await counted(prefix, id, 'quiet');
      while (now !== 2 && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 50));
        now = await counted(prefix, id, 'quiet');
      }
      expect(now).toBe(2);
    } finally {
      await limiter.close();
    }
  });

  it('await limiter.close() resolves once the unspent allotments are back in Redis, even while Redis holds the writes back', async () => {
    const prefix = `tl:${randomBytes(4).toString('hex')}:`;
    const limiter = createLimiter({ defaultStore: redisStore({ client: client as Redis, prefix }), replicas: 1, limits: [ALLOTTED('10m')] });
    const id = limiter.limits[0]?.id as string;
    for (const who of ['a', 'b', 'c']) for (let i = 0; i < 2; i++) expect((await limiter.check({ principal: who })).allowed).toBe(true);
    expect(await Promise.all(['a', 'b', 'c'].map((who) => counted(prefix, id, who)))).toEqual([11, 11, 11]);
    // Every write waits 400 ms: the give-backs reach Redis only after that.
    await (observer as Redis).call('CLIENT', 'PAUSE', '400', 'WRITE');
    const started = Date.now();
    await limiter.close();
    const waited = Date.now() - started;
    expect(await Promise.all(['a', 'b', 'c'].map((who) => counted(prefix, id, who)))).toEqual([2, 2, 2]);
    expect(waited).toBeGreaterThanOrEqual(300);
    // Twice is harmless: nothing is left to give back.
    await limiter.close();
    expect(await counted(prefix, id, 'a')).toBe(2);
  });

  it('the sweep timer never keeps a process alive: a script that takes an allotment and never closes its limiter exits by itself', async () => {
    const script = `
      import { Redis } from 'ioredis';
      import { createLimiter } from ${JSON.stringify(join(import.meta.dirname, '../../../packages/ratecontract/src/index.ts'))};
      import { redisStore } from ${JSON.stringify(join(import.meta.dirname, '../../../packages/ratecontract/src/stores/redis/index.ts'))};
      const client = new Redis(${JSON.stringify((server as RedisServer).url)});
      const limiter = createLimiter({ defaultStore: redisStore({ client, prefix: 'tl-exit:' }), replicas: 1,
        limits: [{ name: 't', purpose: 'shedding', algorithm: 'fixed-window', limit: 100, window: '1h', key: 'principal', tier: { mode: 'allotment', maxAllotment: 10, allotmentLifetime: '10m' } }] });
      for (let i = 0; i < 2; i++) await limiter.check({ principal: 'x' });
      await client.quit();
      console.log('checked');
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => {
      const kill = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(null);
      }, 20_000);
      child.once('exit', (c) => {
        clearTimeout(kill);
        resolve(c);
      });
    });
    expect(err).toBe('');
    expect(out.trim()).toBe('checked');
    expect(code).toBe(0);
  }, 30_000);
});
