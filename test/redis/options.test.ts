/** Option validation of redisStore() and client detection; no server needed. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/index.js';
import { redisStore, type IoredisLike, type NodeRedisLike } from '../../src/stores/redis/index.js';

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
    const { compileLimit } = await import('../../src/core/compile.js');
    const limit = compileLimit({ name: 'f', purpose: 'abuse', limit: 1, window: '1s' }, 'limits[0]', new Set());
    await expect(redisStore({ client: io }).evaluate([{ limit, key: 'k', cost: 1, leaseId: undefined }], 0)).rejects.toThrow('not connected');
  });
});
