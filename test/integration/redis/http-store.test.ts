/**
 * The Redis store over HTTP (`ratecontract/redis-http`, the Upstash REST
 * protocol on fetch) against a REST server written here that forwards to a
 * real redis-server (helpers/rest-server.ts): the store conformance suite,
 * server time, the NOSCRIPT reload, `/pipeline`, deadlines by
 * AbortSignal.timeout with the limiter's fail modes, and HTTP errors.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../../../packages/ratecontract/src/index.js';
import { redisHttpStore, type RedisHttpStoreOptions } from '../../../packages/ratecontract/src/stores/redis-http/index.js';
import { describeStoreConformance } from '../../../packages/ratecontract/src/testing/index.js';
import { connectStandalone, type TestClient } from './helpers/clients.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';
import { startRestServer, type RestServer } from './helpers/rest-server.js';

let server: RedisServer | undefined;
let io: TestClient | undefined;
let rest: RestServer | undefined;

beforeAll(async () => {
  server = await startRedis();
  io = await connectStandalone('ioredis', server.port);
  rest = await startRestServer(io.client as Redis);
}, 30_000);

afterAll(async () => {
  await rest?.close();
  await io?.close();
  await server?.stop();
}, 30_000);

function endpoint(): RestServer {
  if (rest === undefined) throw new Error('no REST server: beforeAll failed');
  return rest;
}

function redis(): Redis {
  if (io === undefined) throw new Error('no Redis client: beforeAll failed');
  return io.client as Redis;
}

function store(options: Partial<RedisHttpStoreOptions> = {}): ReturnType<typeof redisHttpStore> {
  return redisHttpStore({ url: endpoint().url, token: endpoint().token, prefix: `http:${randomBytes(4).toString('hex')}:`, ...options });
}

// The suite calls the store directly, without the limiter: a generous deadline, since what it checks is the decisions.
describeStoreConformance('redis over HTTP (client time)', { createStore: () => store({ timeMode: 'client', ttlGraceMs: 600_000, deadlineMs: 5_000 }) }, { describe, it });

describe('redis over HTTP: the limiter on it', () => {
  it('decides at the server clock: admits N, then an exact wait; decidedAt is Redis TIME', async () => {
    const limiter = createLimiter({
      defaultStore: store(),
      limits: [{ name: 'otp', purpose: 'abuse', algorithm: 'gcra', limit: 3, window: '15m', key: 'principal' }],
    });
    const before = Date.now();
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await limiter.check({ principal: 'alice' }));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions[3]?.status).toBe(429);
    expect(decisions[3]?.retryAfterMs).toBeGreaterThan(290_000);
    expect(decisions[3]?.retryAfterMs).toBeLessThanOrEqual(300_000);
    const [sec] = (await redis().time()) as unknown as [string, string];
    expect(Math.abs(Number(sec) * 1000 - before)).toBeLessThan(5_000);
    await limiter.close();
  });

  it('loads the scripts in one /pipeline request, and reloads them once after SCRIPT FLUSH (NOSCRIPT)', async () => {
    const s = store();
    const from = endpoint().requests.length;
    await s.ready();
    const startup = endpoint().requests.slice(from);
    expect(startup).toHaveLength(1);
    expect(startup[0]?.path).toBe('/pipeline');
    expect(startup[0]?.commands.every((c) => c[0] === 'SCRIPT' && c[1] === 'LOAD')).toBe(true);
    expect(startup[0]?.commands.length).toBeGreaterThanOrEqual(6);

    const limiter = createLimiter({ defaultStore: s, limits: [{ name: 'l', purpose: 'abuse', limit: 5, window: '1m', key: 'principal' }] });
    expect((await limiter.check({ principal: 'p' })).allowed).toBe(true);
    await redis().script('FLUSH');
    const flushedAt = endpoint().requests.length;
    const d = await limiter.check({ principal: 'p' });
    expect(d.allowed).toBe(true);
    expect(d.results[0]?.remaining).toBe(3);
    const after = endpoint().requests.slice(flushedAt).flatMap((r) => r.commands.map((c) => `${c[0]} ${c[1]?.length === 40 ? 'sha' : c[1]}`));
    expect(after).toEqual(['EVALSHA sha', 'SCRIPT LOAD', 'EVALSHA sha']);
    await limiter.close();
  });

  it('sends the checks of one tick as one request (batch), and one /pipeline when batching is off', async () => {
    for (const batch of [undefined, false] as const) {
      const s = store(batch === false ? { batch } : {});
      await s.ready();
      const limiter = createLimiter({ defaultStore: s, limits: [{ name: 'l', purpose: 'abuse', limit: 100, window: '1m', key: 'principal' }] });
      const from = endpoint().requests.length;
      const ds = await Promise.all(Array.from({ length: 8 }, (_, i) => limiter.check({ principal: `u${i % 3}` })));
      expect(ds.every((d) => d.allowed)).toBe(true);
      const sent = endpoint().requests.slice(from);
      expect(sent).toHaveLength(1);
      expect(sent[0]?.path).toBe(batch === false ? '/pipeline' : '/');
      expect(sent[0]?.commands).toHaveLength(batch === false ? 8 : 1);
      await limiter.close();
    }
  });

  it('aborts a request at its deadline (AbortSignal.timeout) and decides by the fail mode', async () => {
    const s = store({ deadlineMs: 50 });
    await s.ready();
    const limiter = createLimiter({
      defaultStore: s,
      limits: [
        { name: 'edge', purpose: 'shedding', limit: 100, window: '1m', key: 'principal', onError: 'open' },
        { name: 'login', purpose: 'abuse', limit: 2, window: '1m', key: 'principal', onError: 'closed' },
      ],
    });
    endpoint().delayMs = 300;
    try {
      const from = endpoint().requests.length;
      const started = performance.now();
      const d = await limiter.check({ principal: 'slow' });
      const took = performance.now() - started;
      expect(took).toBeLessThan(250);
      expect(d.allowed).toBe(true);
      expect(d.results.map((r) => r.onError)).toEqual(['open', 'closed']);
      expect(d.results.map((r) => r.source)).toEqual(['none', 'local']);
      await new Promise((r) => setTimeout(r, 100));
      const sent = endpoint().requests.slice(from);
      expect(sent.length).toBeGreaterThan(0);
      expect(sent.every((r) => r.aborted)).toBe(true);
    } finally {
      endpoint().delayMs = 0;
      await limiter.close();
    }
  });

  it('a wrong token is a store failure (HTTP 401, named), never a decision', async () => {
    const s = store({ token: 'wrong', startupWaitMs: 50 });
    await expect(s.preload()).rejects.toThrow(/redis-http: POST .*\/pipeline \(\d+ commands\): HTTP 401: Unauthorized/);
    const limiter = createLimiter({ defaultStore: s, limits: [{ name: 'edge', purpose: 'shedding', limit: 1, window: '1m', key: 'principal', onError: 'open' }] });
    const d = await limiter.check({ principal: 'x' });
    expect(d.allowed).toBe(true);
    expect(d.outcome).toBe('fail-open');
    expect(d.results[0]?.onError).toBe('open');
    await limiter.close();
  });

  it('an unreachable endpoint is a store failure naming the endpoint', async () => {
    const s = redisHttpStore({ url: 'http://127.0.0.1:9/', token: 't' });
    await expect(s.preload()).rejects.toThrow(/redis-http: POST http:\/\/127\.0\.0\.1:9\/pipeline \(\d+ commands\) failed/);
  });
});
