/**
 * The runtime-neutral entries of the packed package, as a consumer on
 * Bun, Deno or workerd imports them: no @types/node anywhere, a default
 * `tsc --init` configuration (test/types/packed.test.ts compiles this with
 * TypeScript 5 and 7, with and without `skipLibCheck`).
 */
import * as core from 'ratecontract';
import * as redis from 'ratecontract/redis';
import * as redisHttp from 'ratecontract/redis-http';
import * as http from 'ratecontract/http';
import * as testing from 'ratecontract/testing';
import * as hono from 'ratecontract/hono';
import * as client from 'ratecontract/client';
import * as config from 'ratecontract/config';

type IsAny<T> = 0 extends 1 & T ? true : false;
function notAny<T>(value: T, proof: IsAny<T> extends false ? true : never): void {
  void value;
  void proof;
}

const limiter = core.createLimiter({ limits: [{ name: 'per-ip', purpose: 'abuse', limit: 5, window: '1m', key: 'ip' }] });
notAny(limiter, true);
notAny(http.readWebBody, true);
notAny(hono.rateLimit(limiter), true);
notAny(redis.redisStore, true);
notAny(redisHttp.redisHttpStore({ url: 'https://example.upstash.io', token: 't' }), true);
notAny(testing.runStoreConformance, true);
notAny(client.createFetch(), true);
notAny(client.CLIENT_CHANNELS, true);
notAny(config.parseConfig, true);
export { limiter };
