// The Redis contenders, each reduced to the same shape: `await create(port)`
// returns `{ decide, rejected, close }` where `decide(i)` is an
// `async (i) => boolean` making the rate-limit decision(s) of request number
// `i` (true = admitted) against the redis-server on 127.0.0.1:`port`, through
// the contender's own Redis client connection.
//
// Requests: request i carries a recipient (100,000 distinct), a tenant (100),
// an IP (10,000, or BENCH_KEYS) and the global key; a one-limit contender limits by IP only,
// a four-limit chain by all four, most specific first, as DESIGN.md's chain
// (recipient, tenant, ip, global).
//
// No contender rejects during a measurement: every limit is over a 1 hour
// window and far above what a run can send (count-based limits N = 1e8 per
// hour; ratecontract's GCRA a refill of 10 per hour with a burst of 1e8, the
// memory benchmark's throughput profile). The harness counts rejections.

import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { fromDist } from './dist.js';

const { createLimiter } = await fromDist('index.js');
const { redisStore } = await fromDist('stores/redis/index.js');

const require = createRequire(import.meta.url);
const { RateLimiterRedis } = require('rate-limiter-flexible');

/** Every limit's window: 1 hour. */
export const WINDOW_MS = 3_600_000;
/** The i-th distinct IP: an IPv4-shaped string, as `key: 'ip'` sees it (as contenders.js). */
const keyOf = (i) => `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;

/** Count-based limit of every contender, per WINDOW_MS (1 hour). */
export const COUNT = 1e8;
/** ratecontract GCRA: refill RATE per hour, burst BURST (as the memory benchmark's throughput profile). */
const RATE = 10;
const BURST = 1e8;
/** The store's deadline: high enough that no timeout fires under 50 in flight on a loaded machine. */
export const DEADLINE_MS = 1000;

/** Distinct IPs of the one-limit contenders (and the chain's ip limit): BENCH_KEYS, default 10,000. */
export const IP_KEYS = Number(process.env.BENCH_KEYS ?? 10_000);

/** The keys of request i, by limit name. */
export const KEY_OF = {
  recipient: (i) => `+1555${String(i % 100_000).padStart(7, '0')}`,
  tenant: (i) => `tenant-${i % 100}`,
  ip: (i) => keyOf(i % IP_KEYS),
  global: () => 'global',
};

async function ioredis(port) {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  return client;
}

async function nodeRedis(port) {
  return createClient({ socket: { host: '127.0.0.1', port } }).connect();
}

const gcra = (name, purpose, key) => ({ name, purpose, algorithm: 'gcra', limit: RATE, burst: BURST, window: '1h', key });

/**
 * The store's `batch` option: the store's default, unless BENCH_BATCH_MAX_CHECKS
 * is set (`off` for `batch: false`, or a number for `maxChecks`), for
 * redis-batch.js's comparison of batch sizes.
 */
function batchOption() {
  const v = process.env.BENCH_BATCH_MAX_CHECKS;
  if (v === undefined || v === '') return {};
  return { batch: v === 'off' ? false : { maxChecks: Number(v) } };
}

/**
 * The limits' two-tier mode (`tier`, issue 16): none, unless BENCH_TIER is
 * `allotment` or `pre-filter`, for fleet-sizing.js's two-tier and pre-filter
 * modes. The bench process is one process of a fleet of BENCH_REPLICAS
 * (default 4), which sizes the allotments.
 */
function tierOption(limits) {
  const mode = process.env.BENCH_TIER;
  if (mode === undefined || mode === '') return limits;
  if (mode !== 'allotment' && mode !== 'pre-filter') throw new Error(`BENCH_TIER: 'allotment' or 'pre-filter', got ${JSON.stringify(mode)}`);
  return limits.map((l) => ({ ...l, tier: { mode } }));
}

/** ratecontract, redisStore over the given client, `limits`, `ctxOf(i)`. */
function ratecontract(connect, limits, ctxOf) {
  return async (port) => {
    const client = await connect(port);
    const store = redisStore({ client, deadlineMs: DEADLINE_MS, ...batchOption() });
    await store.preload();
    const limiter = createLimiter({ limits: tierOption(limits), defaultStore: store, replicas: Number(process.env.BENCH_REPLICAS ?? 4) });
    let rejected = 0;
    let fellBack = 0;
    // Two-tier decisions resolve without I/O, so a closed loop of them would never let the event loop turn
    // (the measuring timers, the socket reads); a server yields between requests: so does this loop, every 64th check.
    const yieldEvery = process.env.BENCH_TIER ? 64 : 0;
    const decide = async (i) => {
      if (yieldEvery > 0 && i % yieldEvery === 0) await new Promise((r) => setImmediate(r));
      const d = await limiter.check(ctxOf(i));
      // A decision that some limit's fail mode made (the store timed out, failed, or its breaker was open).
      if (d.results.some((r) => r.source !== 'store')) fellBack++;
      if (d.allowed) return true;
      rejected++;
      return false;
    };
    return { decide, rejected: () => rejected, fellBack: () => fellBack, close: () => client.quit() };
  };
}

const ONE = [gcra('ip', 'abuse', 'ip')];
const FOUR = [
  gcra('recipient', 'abuse', 'query.to'),
  gcra('tenant', 'shedding', 'header.x-tenant'),
  gcra('ip', 'abuse', 'ip'),
  gcra('global', 'shedding', 'global'),
];
const oneCtx = (i) => ({ ip: KEY_OF.ip(i) });
const fourCtx = (i) => ({ ip: KEY_OF.ip(i), query: { to: KEY_OF.recipient(i) }, headers: { 'x-tenant': KEY_OF.tenant(i) } });

/** rate-limiter-flexible RateLimiterRedis (ioredis), one limiter per limit, `consume` awaited in sequence. */
function rateLimiterFlexible(names, keyOf = KEY_OF) {
  return async (port) => {
    const client = await ioredis(port);
    const limiters = names.map((name) => new RateLimiterRedis({ storeClient: client, keyPrefix: `rlf-${name}`, points: COUNT, duration: WINDOW_MS / 1000 }));
    const keyFns = names.map((name) => keyOf[name]);
    let rejected = 0;
    const decide = async (i) => {
      try {
        for (let j = 0; j < limiters.length; j++) await limiters[j].consume(keyFns[j](i));
        return true;
      } catch (res) {
        if (res instanceof Error) throw res;
        rejected++;
        return false;
      }
    };
    return { decide, rejected: () => rejected, close: () => client.quit() };
  };
}

/**
 * rate-limit-redis (express-rate-limit's Redis store) through its store API
 * with ioredis' `call` as `sendCommand`, one store per limit, `increment`
 * awaited in sequence; admitted while totalHits <= limit, as the middleware
 * decides (express-rate-limit too runs one middleware after another).
 */
function rateLimitRedis(names) {
  return async (port) => {
    const client = await ioredis(port);
    const stores = [];
    for (const name of names) {
      const s = new RateLimitRedisStore({ sendCommand: (...args) => client.call(...args), prefix: `rlr-${name}:` });
      await s.init({ windowMs: WINDOW_MS });
      stores.push(s);
    }
    const keyFns = names.map((name) => KEY_OF[name]);
    let rejected = 0;
    const decide = async (i) => {
      for (let j = 0; j < stores.length; j++) {
        if ((await stores[j].increment(keyFns[j](i))).totalHits > COUNT) {
          rejected++;
          return false;
        }
      }
      return true;
    };
    return { decide, rejected: () => rejected, close: () => client.quit() };
  };
}

const FOUR_NAMES = ['recipient', 'tenant', 'ip', 'global'];

/**
 * The OTP workload (issue 16): POST /otp/send limited per recipient, per
 * tenant, per IP and globally, with the demo contract's algorithms
 * (src/config/demo.ts: gcra, sliding-window, token-bucket, gcra). Request i
 * goes to its own recipient (distinct), from one of 100 tenants and one of
 * 1,000 IPs (a fixed pseudo-random draw from i, the same for every
 * contender), and every request touches the one global key. The limits are
 * scaled as above so that nothing is rejected: every request is a write.
 */
const mix = (i, salt) => {
  let h = Math.imul(i ^ salt, 0x9e3779b1);
  h ^= h >>> 15;
  h = Math.imul(h, 0x85ebca6b);
  return (h ^ (h >>> 13)) >>> 0;
};
export const OTP_KEY_OF = {
  recipient: (i) => `+1555${String(i).padStart(9, '0')}`,
  tenant: (i) => `tenant-${mix(i, 0x51) % 100}`,
  ip: (i) => keyOf(mix(i, 0x1f3) % 1000),
  global: () => 'global',
};
const OTP = [
  gcra('otp-recipient', 'abuse', 'query.to'),
  { name: 'otp-tenant', purpose: 'abuse', algorithm: 'sliding-window', limit: COUNT, window: '1h', key: 'header.x-tenant' },
  { name: 'otp-ip', purpose: 'abuse', algorithm: 'token-bucket', limit: RATE, burst: BURST, window: '1h', key: 'ip' },
  gcra('otp-global', 'shedding', 'global'),
];
const otpCtx = (i) => ({ ip: OTP_KEY_OF.ip(i), query: { to: OTP_KEY_OF.recipient(i) }, headers: { 'x-tenant': OTP_KEY_OF.tenant(i) } });
/** The one-limit check of the OTP comparison: gcra per IP over the same 1,000 IPs. */
const OTP_ONE = [gcra('otp-ip', 'abuse', 'ip')];
const otpOneCtx = (i) => ({ ip: OTP_KEY_OF.ip(i) });

/** A single-source flood: one IP at 100 times its limit (gcra, 100 per hour, burst 10): nearly every check is rejected. */
const FLOOD = [{ name: 'flood-ip', purpose: 'abuse', algorithm: 'gcra', limit: 100, burst: 10, window: '1h', key: 'ip' }];
const floodCtx = () => ({ ip: '203.0.113.7' });

/** id -> { label, limits (1 or 4), create(port) }. */
export const redisContenders = {
  'rc-gcra': { label: 'ratecontract gcra, ioredis', limits: 1, create: ratecontract(ioredis, ONE, oneCtx) },
  'rc-fixed-window': {
    label: 'ratecontract fixed-window, ioredis',
    limits: 1,
    create: ratecontract(ioredis, [{ name: 'ip', purpose: 'abuse', algorithm: 'fixed-window', limit: COUNT, window: '1h', key: 'ip' }], oneCtx),
  },
  'rc-gcra-node-redis': { label: 'ratecontract gcra, node-redis', limits: 1, create: ratecontract(nodeRedis, ONE, oneCtx) },
  rlf: { label: 'rate-limiter-flexible RateLimiterRedis', limits: 1, create: rateLimiterFlexible(['ip']) },
  rlr: { label: 'rate-limit-redis RedisStore', limits: 1, create: rateLimitRedis(['ip']) },
  'rc-chain4': { label: 'ratecontract 4 gcra limits, one chain', limits: 4, create: ratecontract(ioredis, FOUR, fourCtx) },
  'rlf-x4': { label: 'rate-limiter-flexible, 4 RateLimiterRedis in sequence', limits: 4, create: rateLimiterFlexible(FOUR_NAMES) },
  'rlr-x4': { label: 'rate-limit-redis, 4 RedisStores in sequence', limits: 4, create: rateLimitRedis(FOUR_NAMES) },
  'rc-otp': { label: 'ratecontract OTP chain (recipient, tenant, ip, global), one chain', limits: 4, create: ratecontract(ioredis, OTP, otpCtx) },
  'rc-otp-one': { label: 'ratecontract one limit (gcra per IP, 1,000 IPs)', limits: 1, create: ratecontract(ioredis, OTP_ONE, otpOneCtx) },
  'rc-flood': { label: 'ratecontract one limit, one IP flooding (gcra 100/h, burst 10)', limits: 1, create: ratecontract(ioredis, FLOOD, floodCtx) },
  'rlf-otp': { label: 'rate-limiter-flexible, 4 RateLimiterRedis in sequence (OTP keys)', limits: 4, create: rateLimiterFlexible(FOUR_NAMES, OTP_KEY_OF) },
};
