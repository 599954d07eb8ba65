/**
 * The fault proxy does what the fault tests rely on, against a real
 * redis-server and raw sockets: forwards, delays in order, delays "lost"
 * chunks without losing a byte, stalls existing connections without a FIN
 * or an RST while new ones work, resets, and cleans up. Lower bounds on
 * delays only (a loaded host adds, never removes, time).
 */
import { createConnection, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../integration/redis/helpers/redis-server.js';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';

let redis: RedisServer;
let proxy: FaultProxy | undefined;
const sockets: Socket[] = [];
beforeAll(async () => {
  redis = await startRedis();
}, 30_000);
afterAll(async () => {
  await redis.stop();
});
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await proxy?.close();
  proxy = undefined;
});

/** A raw connection that collects what it reads and what happened to it. */
async function connect(port: number): Promise<{ socket: Socket; data: () => string; ended: () => string[] }> {
  const socket = createConnection({ host: '127.0.0.1', port });
  sockets.push(socket);
  let data = '';
  const ended: string[] = [];
  socket.on('data', (d: Buffer) => (data += d.toString()));
  socket.on('end', () => ended.push('end'));
  socket.on('close', () => ended.push('close'));
  socket.on('error', (e: NodeJS.ErrnoException) => ended.push(e.code ?? 'error'));
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return { socket, data: () => data, ended: () => ended };
}

async function until(budgetMs: number, test: () => boolean): Promise<boolean> {
  const end = Date.now() + budgetMs;
  while (Date.now() < end) {
    if (test()) return true;
    await new Promise((r) => setTimeout(r, 5));
  }
  return test();
}

/** `count` pipelined ECHOs; resolves with the ms until every reply came, in order. */
async function echoes(c: Awaited<ReturnType<typeof connect>>, count: number): Promise<number> {
  const started = performance.now();
  let out = '';
  let expected = '';
  for (let i = 0; i < count; i++) {
    out += `ECHO m${i}\r\n`;
    expected += `$${`m${i}`.length}\r\nm${i}\r\n`;
  }
  const before = c.data().length;
  c.socket.write(out);
  expect(await until(10_000, () => c.data().length - before >= expected.length)).toBe(true);
  expect(c.data().slice(before)).toBe(expected);
  return performance.now() - started;
}

describe('the fault proxy', () => {
  it('forwards both ways', async () => {
    proxy = await startFaultProxy({ targetPort: redis.port });
    const c = await connect(proxy.port);
    await echoes(c, 10);
    expect(proxy.connections).toBe(1);
  });

  it('adds latency each way, pipelined and in order even with jitter', async () => {
    proxy = await startFaultProxy({ targetPort: redis.port });
    const c = await connect(proxy.port);
    proxy.latency({ ms: 40 });
    // One round trip crosses the proxy twice: at least 80 ms.
    expect(await echoes(c, 1)).toBeGreaterThanOrEqual(79);
    proxy.latency({ ms: 30, jitterMs: 30 });
    // 200 writes one at a time, each with its own jittered delay: every reply, in order.
    const before = c.data().length;
    let expected = '';
    for (let i = 0; i < 200; i++) {
      c.socket.write(`ECHO j${i}\r\n`);
      expected += `$${`j${i}`.length}\r\nj${i}\r\n`;
      if (i % 20 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(await until(10_000, () => c.data().length - before >= expected.length)).toBe(true);
    expect(c.data().slice(before)).toBe(expected);
    proxy.latency({ ms: 40, direction: 'up' });
    const up = await echoes(c, 1);
    expect(up).toBeGreaterThanOrEqual(39);
    proxy.heal();
    expect(await echoes(c, 1)).toBeLessThan(up);
  });

  it('loss delays chunks by the RTO and never loses or reorders a byte', async () => {
    proxy = await startFaultProxy({ targetPort: redis.port, seed: 7 });
    const c = await connect(proxy.port);
    proxy.loss({ share: 0.5, rtoMs: 50 });
    let slowest = 0;
    for (let i = 0; i < 10; i++) slowest = Math.max(slowest, await echoes(c, 5));
    // With a share of 0.5 over 20 crossings, at least one was lost (the seed fixes which): one RTO at least.
    expect(slowest).toBeGreaterThanOrEqual(49);
    expect(() => proxy?.loss({ share: 1 })).toThrow(/share must be in \[0, 1\)/);
  });

  it('stall: the existing connection is never answered and never closed; a new one works', async () => {
    proxy = await startFaultProxy({ targetPort: redis.port });
    const c = await connect(proxy.port);
    await echoes(c, 1);
    expect(proxy.stall()).toBe(1);
    const before = c.data().length;
    c.socket.write('PING\r\n');
    await new Promise((r) => setTimeout(r, 500));
    expect(c.data().length).toBe(before);
    expect(c.ended()).toEqual([]);
    expect(c.socket.destroyed).toBe(false);
    const fresh = await connect(proxy.port);
    await echoes(fresh, 3);
    expect([proxy.connections, proxy.stalled, proxy.accepted]).toEqual([2, 1, 2]);
    // heal() does not bring the forgotten flow back.
    proxy.heal();
    await new Promise((r) => setTimeout(r, 100));
    expect(c.data().length).toBe(before);
  });

  it('resetPeers sends an RST; close() destroys every connection and stops listening', async () => {
    proxy = await startFaultProxy({ targetPort: redis.port });
    const a = await connect(proxy.port);
    await echoes(a, 1);
    proxy.resetPeers();
    expect(await until(2000, () => a.ended().includes('ECONNRESET'))).toBe(true);
    const b = await connect(proxy.port);
    await echoes(b, 1);
    proxy.stall();
    const port = proxy.port;
    await proxy.close();
    proxy = undefined;
    expect(await until(2000, () => b.ended().includes('close'))).toBe(true);
    await expect(connect(port)).rejects.toThrow(/ECONNREFUSED/);
  });
});
