/**
 * Option validation of redisStore(), client detection, and what reconnect()
 * asks of each client shape; no server needed (test/faults/dead-connection.test.ts
 * replaces real connections of both clients).
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../packages/ratecontract/src/index.js';
import { DEFAULT_DEAD_CONNECTION_MS } from '../../../packages/ratecontract/src/core/store-circuit.js';
import { redisStore, type IoredisLike, type NodeRedisLike } from '../../../packages/ratecontract/src/stores/redis/index.js';

const never = (): Promise<unknown> => Promise.reject(new Error('not connected'));
const io: IoredisLike = { evalsha: never, eval: never, isCluster: false };
const ioCluster: IoredisLike = { evalsha: never, eval: never, isCluster: true };
const nodeRedis: NodeRedisLike = { evalSha: never, eval: never };
const nodeCluster = { evalSha: never, eval: never, getSlotRandomNode: () => undefined };

describe('redisStore options', () => {
  it('detects the client flavour and topology', () => {
    expect(redisStore({ client: io }).clientInfo).toEqual({ flavour: 'ioredis', cluster: false });
    expect(redisStore({ client: ioCluster }).clientInfo).toEqual({ flavour: 'ioredis', cluster: true });
    expect(redisStore({ client: nodeRedis }).clientInfo).toEqual({ flavour: 'node-redis', cluster: false });
    expect(redisStore({ client: nodeCluster }).clientInfo).toEqual({ flavour: 'node-redis', cluster: true });
    expect(redisStore({ client: io, cluster: true }).clientInfo.cluster).toBe(true);
  });

  it.each([
    [{ client: {} }, 'redisStore.client'],
    [{ client: null }, 'redisStore.client'],
    [{ client: io, prefix: 3 }, 'redisStore.prefix'],
    [{ client: io, timeMode: 'local' }, 'redisStore.timeMode'],
    [{ client: io, ttlGraceMs: -1, timeMode: 'client' }, 'redisStore.ttlGraceMs'],
    [{ client: io, ttlGraceMs: 1000 }, 'redisStore.ttlGraceMs'],
    [{ client: io, clock: { now: () => 0 } }, 'redisStore.clock'],
    [{ client: io, keySecret: '' }, 'redisStore.keySecret'],
    [{ client: io, deadConnectionMs: 0 }, 'redisStore.deadConnectionMs'],
    [{ client: io, deadConnectionMs: -1 }, 'redisStore.deadConnectionMs'],
    [{ client: io, deadConnectionMs: Infinity }, 'redisStore.deadConnectionMs'],
    [{ client: io, deadConnectionMs: '2s' }, 'redisStore.deadConnectionMs'],
    [{ client: io, deadConnectionMs: true }, 'redisStore.deadConnectionMs'],
    [{ client: io, onDeadConnection: 'restart' }, 'redisStore.onDeadConnection'],
    [{ client: io, deadConnection: 2000 }, 'redisStore.deadConnection'],
  ])('rejects %o naming %s', (options, option) => {
    let caught: unknown;
    try {
      redisStore(options as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).option).toBe(option);
    expect((caught as ConfigError).code).toBe('RC_INVALID_OPTION');
  });

  it('hashes every key, under the prefix, with or without a secret', () => {
    const plain = redisStore({ client: io });
    const secret = redisStore({ client: io, prefix: 'x:', keySecret: 's3cret' });
    const k = plain.keyFor('otp:gcra', '+15550001');
    expect(k).toMatch(/^rc:otp:gcra:v2:[A-Za-z0-9_-]{22}$/);
    expect(k).not.toContain('15550001');
    expect(secret.keyFor('otp:gcra', '+15550001')).toMatch(/^x:otp:gcra:v2:[A-Za-z0-9_-]{22}$/);
    expect(secret.keyFor('otp:gcra', '+15550001').slice(2)).not.toBe(k.slice(3));
    expect(plain.keyFor('otp:gcra', 'a')).not.toBe(plain.keyFor('otp:gcra', 'b'));
  });

  it('a failing client makes evaluate reject (the limiter then applies onError)', async () => {
    const { compileLimit } = await import('../../../packages/ratecontract/src/core/compile.js');
    const limit = compileLimit({ name: 'f', purpose: 'abuse', limit: 1, window: '1s' }, 'limits[0]', new Set());
    await expect(redisStore({ client: io }).evaluate([{ spec: limit, key: 'k', cost: 1, leaseId: undefined }], 0)).rejects.toThrow('not connected');
  });
});

describe('redisStore: a connection taken for dead', () => {
  it('refuses a misspelt option with a hint, and explains the values it takes', () => {
    expect(() => redisStore({ client: io, deadConnection: 2000 } as never)).toThrow(/unknown option "deadConnection".*deadConnectionMs/);
    expect(() => redisStore({ client: io, onDeadConnection: 'restart' as never })).toThrow(/onDeadConnection: must be 'reconnect' or 'report', got "restart"/);
    expect(() => redisStore({ client: io, deadConnectionMs: 0 })).toThrow(/deadConnectionMs: must be a positive number of ms or false, got 0/);
    expect(redisStore({ client: io }).deadConnectionMs).toBe(DEFAULT_DEAD_CONNECTION_MS);
    expect(redisStore({ client: io, deadConnectionMs: false }).deadConnectionMs).toBe(false);
    expect(redisStore({ client: io }).onDeadConnection).toBe('reconnect');
  });

  /** An ioredis-shaped client: what reconnect() calls on it. */
  function ioShaped(status: string, connecting = false) {
    const calls: string[] = [];
    const client = Object.assign(new EventEmitter(), {
      evalsha: never,
      eval: never,
      isCluster: false,
      status,
      stream: { connecting, destroy: () => void calls.push('stream.destroy') },
      disconnect: (reconnect?: boolean) => void calls.push(`disconnect(${String(reconnect)})`),
    });
    return { client, calls };
  }

  it('ioredis: disconnect(true) and the old socket destroyed while the client reports ready; a pending connect abandoned', () => {
    const ready = ioShaped('ready');
    expect(redisStore({ client: ready.client }).reconnect()).toBe(true);
    expect(ready.calls).toEqual(['disconnect(true)', 'stream.destroy']);
    for (const status of ['reconnecting', 'connecting', 'connect', 'end', 'wait']) {
      const other = ioShaped(status);
      expect(redisStore({ client: other.client }).reconnect()).toBe(false);
      expect(other.calls).toEqual([]);
    }
    // A connect that is still pending (its SYN unanswered, as behind a partition) is abandoned so that ioredis tries
    // again at once by its retryStrategy, instead of waiting out connectTimeout (10 s by default) while the kernel
    // backs off its SYN retransmissions (1, 3, 7 s).
    const pending = ioShaped('connecting', true);
    expect(redisStore({ client: pending.client }).reconnect()).toBe(true);
    expect(pending.calls).toEqual(['stream.destroy']);
    const reportOnly = ioShaped('ready');
    expect(redisStore({ client: reportOnly.client, onDeadConnection: 'report' }).reconnect()).toBe(false);
    expect(reportOnly.calls).toEqual([]);
    const cluster = ioShaped('ready');
    expect(redisStore({ client: Object.assign(cluster.client, { isCluster: true }) }).reconnect()).toBe(false);
    expect(cluster.calls).toEqual([]);
  });

  it("node-redis: destroy() then connect(); the 'end' of that destroy() does not end ready()", async () => {
    const calls: string[] = [];
    let loads = 0;
    const client = Object.assign(new EventEmitter(), {
      isReady: true,
      evalSha: never,
      eval: never,
      // Scripts load only once the connection has been replaced.
      scriptLoad: () => (loads++ === 0 ? Promise.reject(new Error('connection silent')) : Promise.resolve('sha')),
      destroy() {
        calls.push('destroy');
        client.isReady = false;
        client.emit('end');
      },
      connect() {
        calls.push('connect');
        setTimeout(() => {
          client.isReady = true;
          client.emit('ready');
        }, 5);
        return Promise.resolve(client);
      },
    });
    const store = redisStore({ client });
    const ready = store.ready({ timeoutMs: 5000 });
    await new Promise((r) => setTimeout(r, 5));
    expect(store.reconnect()).toBe(true);
    expect(calls).toEqual(['destroy', 'connect']);
    await expect(ready).resolves.toBeUndefined();
    // Not ready: nothing to replace.
    client.isReady = false;
    expect(store.reconnect()).toBe(false);
    expect(calls).toEqual(['destroy', 'connect']);
  });
});

describe('documented defaults (docs/redis.md options table)', () => {
  const doc = readFileSync(new URL('../../../docs/redis.md', import.meta.url), 'utf8');
  const row = (option: string): string => {
    const line = doc.split('\n').find((l) => l.startsWith(`| \`${option}\` |`));
    if (line === undefined) throw new Error(`docs/redis.md has no options row for ${option}`);
    return (line.split('|')[2] as string).trim();
  };
  it('deadConnectionMs and onDeadConnection', () => {
    expect(row('deadConnectionMs')).toBe(String(DEFAULT_DEAD_CONNECTION_MS));
    expect(row('onDeadConnection')).toBe(`\`'${redisStore({ client: io }).onDeadConnection}'\``);
  });
});
