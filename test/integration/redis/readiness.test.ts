/**
 * `store.ready()`: connected and scripts loaded, with each client as the docs
 * create it; bounded by `timeoutMs` while Redis is down; resolving once a
 * Redis that was down at startup comes up; refused for an ended client.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import * as scripts from '../../../packages/ratecontract/src/stores/redis/scripts.generated.js';
import { freePort, redisCli, startRedis, type RedisServer } from './helpers/redis-server.js';

const servers: RedisServer[] = [];
const closers: Array<() => unknown> = [];
afterAll(async () => {
  for (const close of closers) await Promise.resolve(close()).catch(() => undefined);
  await Promise.all(servers.map((s) => s.stop()));
}, 30_000);

/** Every script the store loads: each one in scripts.generated.ts. */
const SCRIPT_COUNT = Object.values(scripts).length;

async function cachedScripts(port: number): Promise<number> {
  const info = await redisCli(port, 'INFO', 'memory');
  return Number(/number_of_cached_scripts:(\d+)/.exec(info)?.[1] ?? 'NaN');
}

describe('store.ready()', () => {
  it('resolves once the client is connected and every script is loaded: ioredis (default and fail-fast) and node-redis', async () => {
    const server = await startRedis();
    servers.push(server);
    const url = server.url;
    const ioDefault = new Redis(url);
    const ioFailFast = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    const nodeRedis = createClient({ url });
    for (const c of [ioDefault, ioFailFast, nodeRedis]) c.on('error', () => undefined);
    closers.push(() => ioDefault.quit(), () => ioFailFast.quit(), () => nodeRedis.quit());
    // Created and asked at once, as a server that waits before it listens would.
    const stores = [redisStore({ client: ioDefault }), redisStore({ client: ioFailFast })];
    const connecting = nodeRedis.connect();
    stores.push(redisStore({ client: nodeRedis }));
    await Promise.all(stores.map((s) => s.ready({ timeoutMs: 10_000 })));
    await connecting;
    expect(await cachedScripts(server.port)).toBe(SCRIPT_COUNT);
  }, 30_000);

  it('with timeoutMs, rejects with RC_STORE_NOT_READY while Redis is down, then resolves once it comes up', async () => {
    const port = await freePort();
    const client = new Redis(`redis://127.0.0.1:${port}`, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    client.on('error', () => undefined);
    closers.push(() => client.disconnect());
    const store = redisStore({ client });
    await expect(store.ready({ timeoutMs: 200 })).rejects.toMatchObject({ code: 'RC_STORE_NOT_READY' });
    const server = await startRedis([], port);
    servers.push(server);
    await store.ready({ timeoutMs: 10_000 });
    expect(await cachedScripts(port)).toBe(SCRIPT_COUNT);
  }, 30_000);

  it('rejects once the client has ended', async () => {
    const port = await freePort();
    const client = new Redis(`redis://127.0.0.1:${port}`, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    const store = redisStore({ client });
    await expect(store.ready({ timeoutMs: 10_000 })).rejects.toMatchObject({ code: 'RC_STORE_NOT_READY', message: /client has ended/ });
  }, 30_000);

  it('refuses an invalid timeoutMs and startupWaitMs, naming the option', () => {
    const client = new Redis({ lazyConnect: true });
    const store = redisStore({ client });
    expect(() => store.ready({ timeoutMs: -1 })).toThrow(/ready\.timeoutMs: must be a non-negative number/);
    expect(() => redisStore({ client, startupWaitMs: Number.NaN })).toThrow(/redisStore\.startupWaitMs: must be a non-negative number/);
    client.disconnect();
  });
});
