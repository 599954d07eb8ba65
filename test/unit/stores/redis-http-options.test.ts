import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../packages/ratecontract/src/index.js';
import { redisHttpStore, REDIS_HTTP_STORE_DEFAULTS, type RedisHttpStoreOptions } from '../../../packages/ratecontract/src/stores/redis-http/index.js';

const ok = { url: 'https://eu1-example.upstash.io', token: 'AXXX' };

function refused(options: unknown): ConfigError {
  try {
    redisHttpStore(options as RedisHttpStoreOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('not refused');
}

describe('redisHttpStore options', () => {
  it('builds a Redis store with the HTTP defaults', () => {
    const s = redisHttpStore(ok);
    expect(s.kind).toBe('redis');
    expect(s.deadlineMs).toBe(REDIS_HTTP_STORE_DEFAULTS.deadlineMs);
    expect(s.deadConnectionMs).toBe(false);
    expect(s.clientInfo).toEqual({ flavour: 'ioredis', cluster: false });
    expect(s.prefix).toBe('rc:');
    expect(s.timeMode).toBe('server');
  });

  it.each([
    [undefined, 'redisHttpStore', /options object/],
    [{ token: 't' }, 'redisHttpStore.url', /is required/],
    [{ ...ok, url: 'not a url' }, 'redisHttpStore.url', /not a URL/],
    [{ ...ok, url: 'redis://127.0.0.1:6379' }, 'redisHttpStore.url', /http: or https:/],
    [{ ...ok, url: 'https://user:pw@example.upstash.io' }, 'redisHttpStore.url', /credentials/],
    [{ ...ok, url: 'https://example.upstash.io/?token=x' }, 'redisHttpStore.url', /no query/],
    [{ url: ok.url }, 'redisHttpStore.token', /is required/],
    [{ ...ok, token: '' }, 'redisHttpStore.token', /empty string/],
    [{ ...ok, fetch: 'fetch' }, 'redisHttpStore.fetch', /function/],
    [{ ...ok, deadlineMs: 0 }, 'redisHttpStore.deadlineMs', /positive/],
    [{ ...ok, loadTimeoutMs: -1 }, 'redisHttpStore.loadTimeoutMs', /positive/],
    [{ ...ok, prefix: 5 }, 'redisHttpStore.prefix', /string/],
    [{ ...ok, timeMode: 'local' }, 'redisHttpStore.timeMode', /'server' or 'client'/],
    [{ ...ok, ttlGraceMs: 5 }, 'redisHttpStore.ttlGraceMs', /timeMode 'client'/],
    [{ ...ok, batch: { maxChecks: 0 } }, 'redisHttpStore.batch.maxChecks', /1 to 1024/],
    [{ ...ok, client: {} }, 'redisHttpStore.client', /unknown option "client"/],
    [{ ...ok, deadlinMs: 5 }, 'redisHttpStore.deadlinMs', /unknown option "deadlinMs".*deadlineMs/],
  ])('refuses %j, naming %s', (options, option, message) => {
    const e = refused(options);
    expect(e.option).toBe(option);
    expect(e.message).toMatch(message);
    expect(e.message.startsWith(`${option}: `)).toBe(true);
  });
});
