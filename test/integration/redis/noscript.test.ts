/**
 * EVALSHA with NOSCRIPT recovery: after SCRIPT FLUSH and after a server
 * restart on the same port (empty script cache), every script runs again
 * without an error reaching the caller. Also: the generated module's SHA1s
 * are the ones Redis computes, and the module has not drifted from the .lua
 * files.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StoreOp } from '../../../packages/ratecontract/src/index.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { chainScript, heartbeatScript, refundScript, releaseScript } from '../../../packages/ratecontract/src/stores/redis/scripts.generated.js';
import { connectStandalone, type Flavour, type TestClient } from './helpers/clients.js';
import { redisCli, startRedis, type RedisServer } from './helpers/redis-server.js';

let server: RedisServer | undefined;
const clients = new Map<Flavour, TestClient>();

beforeAll(async () => {
  server = await startRedis();
  for (const flavour of ['ioredis', 'node-redis'] as const) clients.set(flavour, await connectStandalone(flavour, server.port));
}, 30_000);

afterAll(async () => {
  await Promise.all([...clients.values()].map((c) => c.close()));
  await server?.stop();
}, 30_000);

const gcra = compileLimit({ name: 'ns-gcra', purpose: 'abuse', algorithm: 'gcra', limit: 3, window: '1h' }, 'limits[0]', new Set());
const lease = compileLimit({ name: 'ns-lease', purpose: 'shedding', algorithm: 'concurrency', limit: 2, window: '1h' }, 'limits[1]', new Set());

function opsFor(n: number): StoreOp[] {
  return [
    { spec: gcra, key: 'k', cost: 1, leaseId: undefined },
    { spec: lease, key: 'k', cost: 1, leaseId: `lease-${n}` },
  ];
}

async function scriptsCached(): Promise<string> {
  const port = (server as RedisServer).port;
  return (await redisCli(port, 'script', 'exists', chainScript.sha1, refundScript.sha1, releaseScript.sha1, heartbeatScript.sha1)).replace(/\s+/g, '');
}

describe('generated scripts', () => {
  it('match the .lua files (npm run check:lua)', async () => {
    const out = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['scripts/gen-lua.js', '--check'], { timeout: 20_000 }, (error, stdout, stderr) => (error ? reject(new Error(stderr || error.message)) : resolve(stdout)));
    });
    expect(out).toContain('up to date');
  });

  it('carry the SHA1 that Redis computes (SCRIPT LOAD)', async () => {
    for (const s of [chainScript, refundScript, releaseScript, heartbeatScript]) {
      expect((await redisCli((server as RedisServer).port, 'script', 'load', s.text)).trim()).toBe(s.sha1);
    }
  });
});

describe.each(['ioredis', 'node-redis'] as const)('NOSCRIPT recovery with %s', (flavour) => {
  it('after SCRIPT FLUSH, every call succeeds and state is kept', async () => {
    const client = clients.get(flavour) as TestClient;
    const store = redisStore({ client: client.client, prefix: `ns:${randomBytes(4).toString('hex')}:` });
    const first = await store.evaluate(opsFor(1), 0);
    expect(first.map((r) => r.remaining)).toEqual([2, 1]);
    await redisCli((server as RedisServer).port, 'script', 'flush');
    expect(await scriptsCached()).toBe('0000');
    const second = await store.evaluate(opsFor(2), 0);
    expect(second.map((r) => [r.allowed, r.remaining])).toEqual([
      [true, 1],
      [true, 0],
    ]);
    await redisCli((server as RedisServer).port, 'script', 'flush');
    await store.refund(opsFor(2), 0);
    await redisCli((server as RedisServer).port, 'script', 'flush');
    await store.release((opsFor(1)[1] as StoreOp), 0);
    await redisCli((server as RedisServer).port, 'script', 'flush');
    expect(await store.heartbeat('replica-a', 10_000, 0)).toBe(1);
    const third = await store.evaluate(opsFor(3), 0);
    // Refunded the second check's gcra cost and lease, released the first lease.
    expect(third.map((r) => [r.allowed, r.remaining])).toEqual([
      [true, 1],
      [true, 1],
    ]);
  });
});

describe.each(['ioredis', 'node-redis'] as const)('preload with %s', (flavour) => {
  it('loads every script (SCRIPT EXISTS after SCRIPT FLUSH)', async () => {
    const store = redisStore({ client: (clients.get(flavour) as TestClient).client });
    await redisCli((server as RedisServer).port, 'script', 'flush');
    await store.preload();
    expect(await scriptsCached()).toBe('1111');
  });
});

describe('NOSCRIPT recovery after a server restart on the same port', () => {
  it('both clients reconnect and their next calls succeed', async () => {
    const srv = server as RedisServer;
    const stores = [...clients.values()].map((c) => redisStore({ client: c.client, prefix: `rs:${c.flavour}:` }));
    for (const store of stores) expect((await store.evaluate(opsFor(1), 0))[0]?.allowed).toBe(true);
    await srv.restart();
    expect(await scriptsCached()).toBe('0000');
    const until = Date.now() + 15_000;
    for (const store of stores) {
      // Reconnection itself may take a moment; the first call that reaches the server must succeed.
      for (;;) {
        try {
          const r = await store.evaluate(opsFor(2), 0);
          expect(r.map((x) => x.remaining)).toEqual([2, 1]); // the restarted server is empty
          break;
        } catch (error) {
          if (Date.now() > until || (error instanceof Error && error.message.includes('NOSCRIPT'))) throw error;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
  }, 40_000);
});
