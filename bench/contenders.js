// The contenders, each reduced to the same shape: `create(profile)` returns
// `{ decide, rejected, inspect }` where `decide` is an `async (key) => boolean`
// making one rate-limit decision for `key` (true = admitted) on a fresh,
// private in-memory instance. Every `decide` is the same kind of wrapper: it
// awaits the library's own call (or, for `limiter`, makes its synchronous
// call), turns the answer into a boolean and counts rejections.
//
// Every contender gets the same contract, a per-key limit over a 1 hour
// window, in one of two profiles:
//
// - `throughput`: limits so high that nothing is rejected even on one hot key
//   (the harness prints the rejection count; it must be 0). Count-based
//   limiters (fixed window, sliding window, rate-limiter-flexible,
//   express-rate-limit, the Map counter) get N = 1e8 per hour. Rate-based ones
//   (GCRA, token bucket, limiter's TokenBucket) get a refill of 10 per hour
//   with a burst of 1e8, so each hit keeps a key's state alive for 6 minutes,
//   longer than any run: every contender updates live state and never
//   expires-and-recreates it. (With a refill of 1e8/h a key's GCRA state is
//   "full again" 36 us after each hit and the memory store would reclaim and
//   recreate it between visits: a different workload.)
// - `heap`: an ordinary limit, 100 per hour (burst 100), one decision per key;
//   a key's state lives at least 36 s, longer than the insertion takes.

import { createRequire } from 'node:module';
import { MemoryStore as ErlMemoryStore } from 'express-rate-limit';
import { TokenBucket } from 'limiter';

// RATECONTRACT_DIST=/abs/path/to/dist/index.js compares a candidate build (profiling only).
const { createLimiter, memoryStore } = await import(process.env.RATECONTRACT_DIST ?? '../packages/ratecontract/dist/index.js');

const require = createRequire(import.meta.url);
const { RateLimiterMemory } = require('rate-limiter-flexible');

export const WINDOW_MS = 3_600_000;

/** count: N of count-based limiters; rate / burst: refill N and bucket size of rate-based ones. All per WINDOW_MS. */
export const PROFILES = {
  throughput: { count: 1e8, rate: 10, burst: 1e8 },
  heap: { count: 100, rate: 100, burst: 100 },
};

/** ratecontract `createLimiter` + `memoryStore()`, one limit keyed by `ip`, awaited `check`. */
function ratecontract(algorithm) {
  return (profile) => {
    const rateBased = algorithm === 'gcra' || algorithm === 'token-bucket';
    const store = memoryStore();
    const limiter = createLimiter({
      limits: [
        {
          name: 'bench',
          purpose: 'shedding',
          algorithm,
          limit: rateBased ? profile.rate : profile.count,
          ...(rateBased ? { burst: profile.burst } : {}),
          window: '1h',
          key: 'ip',
        },
      ],
      defaultStore: store,
    });
    let rejected = 0;
    const decide = async (key) => {
      if ((await limiter.check({ ip: key })).allowed) return true;
      rejected++;
      return false;
    };
    return { decide, rejected: () => rejected, inspect: () => ({ storedKeys: store.size, overflowSlots: store.overflowSize }) };
  };
}

/** rate-limiter-flexible RateLimiterMemory.consume; rejection = over the limit. */
function rateLimiterFlexible(profile) {
  const rl = new RateLimiterMemory({ points: profile.count, duration: WINDOW_MS / 1000 });
  let rejected = 0;
  const decide = async (key) => {
    try {
      await rl.consume(key);
      return true;
    } catch (res) {
      if (res instanceof Error) throw res;
      rejected++;
      return false;
    }
  };
  return { decide, rejected: () => rejected, inspect: () => {
      // What it really does: a Record per key, and whether each holds a live setTimeout.
      let timers = 0;
      for (const rec of rl._memoryStorage._storage.values()) if (rec.timeoutId != null) timers++;
      return { storedKeys: rl._memoryStorage._storage.size, liveTimers: timers };
    }, };
}

/** express-rate-limit's MemoryStore used directly: increment(key), admitted while totalHits <= limit (what its middleware does). */
function expressRateLimit(profile) {
  const store = new ErlMemoryStore();
  store.init({ windowMs: WINDOW_MS });
  let rejected = 0;
  const decide = async (key) => {
    if ((await store.increment(key)).totalHits <= profile.count) return true;
    rejected++;
    return false;
  };
  return { decide, rejected: () => rejected, inspect: () => ({ storedKeys: store.current.size + store.previous.size }) };
}

/**
 * limiter's TokenBucket. The package has no per-key API (one TokenBucket or
 * RateLimiter is one bucket), so this is a Map<string, TokenBucket>, the
 * way its README suggests for per-client limits. A new TokenBucket starts
 * empty (content 0), so each is filled on creation. tryRemoveTokens is the
 * in-memory decide-now call (removeTokens waits for tokens instead of deciding).
 */
function limiterTokenBucket(profile) {
  const buckets = new Map();
  let rejected = 0;
  const decide = async (key) => {
    let b = buckets.get(key);
    if (b === undefined) {
      b = new TokenBucket({ bucketSize: profile.burst, tokensPerInterval: profile.rate, interval: WINDOW_MS });
      b.content = profile.burst;
      buckets.set(key, b);
    }
    if (b.tryRemoveTokens(1)) return true;
    rejected++;
    return false;
  };
  return { decide, rejected: () => rejected, inspect: () => ({ storedKeys: buckets.size }) };
}

/**
 * The practical ceiling: an awaited 10-line async Map<string, {count, reset}>
 * fixed-window counter. Like every library here, it is an async call that the
 * caller awaits, so it is called through the same kind of wrapper as check().
 */
function mapCounter(profile) {
  const m = new Map();
  async function counter(key) {
    const now = Date.now();
    let e = m.get(key);
    if (e === undefined || e.reset <= now) {
      e = { count: 0, reset: now + WINDOW_MS };
      m.set(key, e);
    }
    return ++e.count <= profile.count;
  }
  let rejected = 0;
  const decide = async (key) => {
    if (await counter(key)) return true;
    rejected++;
    return false;
  };
  return { decide, rejected: () => rejected, inspect: () => ({ storedKeys: m.size }) };
}

/** Heap reference only: the smallest honest per-key record, a plain Map<string, object> counter. */
function plainMap() {
  const m = new Map();
  const decide = async (key) => {
    const e = m.get(key);
    if (e === undefined) m.set(key, { n: 1 });
    else e.n++;
    return true;
  };
  return { decide, rejected: () => 0, inspect: () => ({ storedKeys: m.size }) };
}

/**
 * id -> { label, create, throughput, heap }. `throughput` / `heap`: whether
 * it takes part in that benchmark.
 */
export const contenders = {
  'rc-gcra': { label: 'ratecontract gcra', create: ratecontract('gcra'), throughput: true, heap: true },
  'rc-token-bucket': { label: 'ratecontract token-bucket', create: ratecontract('token-bucket'), throughput: true, heap: true },
  'rc-fixed-window': { label: 'ratecontract fixed-window', create: ratecontract('fixed-window'), throughput: true, heap: true },
  'rc-sliding-window': { label: 'ratecontract sliding-window', create: ratecontract('sliding-window'), throughput: true, heap: true },
  rlf: { label: 'rate-limiter-flexible RateLimiterMemory', create: rateLimiterFlexible, throughput: true, heap: true },
  erl: { label: 'express-rate-limit MemoryStore', create: expressRateLimit, throughput: true, heap: true },
  limiter: { label: 'limiter TokenBucket (Map of buckets)', create: limiterTokenBucket, throughput: true, heap: true },
  'map-counter': { label: 'awaited Map fixed-window counter (ceiling)', create: mapCounter, throughput: true, heap: true },
  'plain-map': { label: 'plain Map<string, object> (heap reference)', create: plainMap, throughput: false, heap: true },
};

/** The i-th distinct key: an IPv4-shaped string, as `key: 'ip'` would see. */
export function keyOf(i) {
  return `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
}
