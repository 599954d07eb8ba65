/**
 * The 03:41 incident, replayed: a brute-force flood of invented keys (5,000,000
 * recipients) at the limiter's Redis, which has a small `maxmemory` and the
 * `noeviction` policy, so running out of memory shows as OOM errors instead
 * of silent eviction. The flood goes through the real Redis store (batched
 * script calls, many checks in flight).
 *
 * - With `keySlots`, Redis memory stays under the bound `audit` states
 *   (baseline + slots x measured bytes per key), Redis never answers OOM,
 *   and a legitimate key that had spent its budget before the flood is
 *   still refused by the store throughout.
 * - Without it, the same flood drives Redis to OOM: checks fall back to
 *   their fail mode, and the legitimate key gets a fresh local budget.
 *   This flood stops shortly after the first OOM.
 *
 * Budget: 120 s for the file. The unbounded flood runs first and stops
 * 20,000 checks after its first OOM; the bounded one then floods until
 * 5,000,000 keys or 70 s (RC_FLOOD_KEYS, RC_FLOOD_MS), whichever comes
 * first, and must get at least 1.5x as far as the unbounded one did before
 * OOM, with every slot in use (from there on no key can add memory). On a quiet two-core host it reaches the 5,000,000; with other work
 * on the host it may stop earlier, and prints how far it got.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { availableParallelism } from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type LimitDefinition, type Limiter } from '../../packages/ratecontract/src/index.js';
import { bytesPerKey } from '../../packages/cli/src/contract/audit.js';
import { compileLimit } from '../../packages/ratecontract/src/core/compile.js';
import { redisStore } from '../../packages/ratecontract/src/stores/redis/index.js';
import { redisCli, startRedis, type RedisServer } from '../integration/redis/helpers/redis-server.js';

const FLOOD_KEYS = Number(process.env.RC_FLOOD_KEYS ?? 5_000_000);
/** Time budget of the bounded flood: it stops at FLOOD_KEYS or after this long, whichever is first. */
const FLOOD_MS = Number(process.env.RC_FLOOD_MS ?? 70_000);
/** Invented keys the unbounded flood had sent when Redis first answered OOM. */
let keysAtOom: number | undefined;
const IN_FLIGHT = 512;
const SLOTS = 65_536;
const PINNED = availableParallelism() >= 2;

let redis: RedisServer | undefined;
let client: Redis | undefined;

beforeAll(async () => {
  redis = await startRedis(['--maxmemory', '64mb', '--maxmemory-policy', 'noeviction'], undefined, PINNED ? { cpu: 1 } : {});
  client = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
}, 30_000);

afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
}, 30_000);

async function usedMemory(): Promise<number> {
  const info = await redisCli((redis as RedisServer).port, 'info', 'memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

interface FloodReport {
  readonly checks: number;
  /** Flood checks admitted (invented keys that share a slot share its 3 attempts). */
  readonly admitted: number;
  readonly bySource: Record<string, number>;
  readonly oomErrors: number;
  readonly otherErrors: number;
  readonly fallbacks: number;
  readonly peakUsedMemory: number;
  /** The legitimate key's checks during the flood: [decided by the store and refused, anything else]. */
  readonly victim: { readonly refusedByStore: number; readonly otherwise: number; readonly admitted: number };
  readonly elapsedMs: number;
}

function definition(slots: number | undefined): LimitDefinition {
  return {
    name: 'otp-recipient',
    purpose: 'abuse',
    algorithm: 'gcra',
    limit: 3,
    window: '15m',
    key: 'principal',
    failClosedAfter: '10m',
    reason: 'SMS bombing of one recipient',
    ...(slots !== undefined && { keySlots: slots }),
  };
}

/**
 * Floods `keys` invented recipients, `IN_FLIGHT` checks in flight, checking the
 * victim every 5,000 checks and sampling used_memory every 250,000. Stops early
 * `stopAfterOom` checks after the first OOM error, if set.
 */
async function flood(limiter: Limiter, tag: string, keys: number, stopAfterOom: number | undefined, budgetMs: number): Promise<FloodReport & { firstOomAt: number | undefined }> {
  let oomErrors = 0;
  let otherErrors = 0;
  let fallbacks = 0;
  let firstOomAt: number | undefined;
  const onError = (m: unknown): void => {
    const e = m as { reason: string; error: unknown };
    if (e.reason === 'error' && String(e.error).includes('OOM')) {
      oomErrors++;
      firstOomAt ??= issued;
    } else otherErrors++;
  };
  const onFallback = (): void => void fallbacks++;
  subscribe('ratecontract:store-error', onError);
  subscribe('ratecontract:fallback', onFallback);
  const bySource: Record<string, number> = {};
  let admitted = 0;
  const victim = { refusedByStore: 0, otherwise: 0, admitted: 0 };
  let issued = 0;
  let peak = await usedMemory();
  let sampling: Promise<void> = Promise.resolve();
  const started = Date.now();
  let timeUp = false;
  const timer = setTimeout(() => (timeUp = true), budgetMs);
  const stop = (): boolean => timeUp || issued >= keys || (stopAfterOom !== undefined && firstOomAt !== undefined && issued >= firstOomAt + stopAfterOom);
  async function lane(): Promise<void> {
    while (!stop()) {
      const i = issued++;
      if (i % 5000 === 0) {
        const d = await limiter.check({ principal: 'victim' });
        if (d.allowed) victim.admitted++;
        if (!d.allowed && d.results[0]?.source === 'store') victim.refusedByStore++;
        else victim.otherwise++;
      }
      if (i % 250_000 === 0) {
        sampling = sampling.then(async () => {
          peak = Math.max(peak, await usedMemory());
        });
      }
      const d = await limiter.check({ principal: `${tag}-${i}` });
      if (d.allowed) admitted++;
      const source = d.results[0]?.source ?? 'none';
      bySource[source] = (bySource[source] ?? 0) + 1;
    }
  }
  try {
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
    await sampling;
    peak = Math.max(peak, await usedMemory());
  } finally {
    clearTimeout(timer);
    unsubscribe('ratecontract:store-error', onError);
    unsubscribe('ratecontract:fallback', onFallback);
  }
  return { firstOomAt, checks: issued, admitted, bySource, oomErrors, otherErrors, fallbacks, peakUsedMemory: peak, victim, elapsedMs: Date.now() - started };
}

/** A limiter on the flooded Redis; the legitimate key spends its 3 attempts first. */
async function setUp(prefix: string, slots: number | undefined): Promise<Limiter> {
  const store = redisStore({ client: client as Redis, prefix, deadlineMs: 2000, batch: { maxChecks: 64 } });
  await store.ready();
  const limiter = createLimiter({ defaultStore: store, limits: [definition(slots)] });
  for (let i = 0; i < 3; i++) expect((await limiter.check({ principal: 'victim' })).allowed).toBe(true);
  const spent = await limiter.check({ principal: 'victim' });
  expect([spent.allowed, spent.results[0]?.source]).toEqual([false, 'store']);
  return limiter;
}

describe('a flood of invented keys at a Redis with maxmemory 64mb (noeviction)', () => {
  it('without keySlots, the same flood drives Redis to OOM: checks fall back, and the spent key gets a fresh local budget', async () => {
    await redisCli((redis as RedisServer).port, 'flushall');
    const limiter = await setUp('unbounded:', undefined);
    const r = await flood(limiter, 'unbounded', FLOOD_KEYS, 20_000, 50_000);
    keysAtOom = r.firstOomAt;
    // The spent key checked in the same pass as a new key's check: one script call, which Redis refuses at its first
    // write, so both fall back. (During the flood the spent key's own check may go in a call alone, which writes
    // nothing and is answered: whether it does depends on how the lanes fall into passes.)
    const after = { local: 0, admitted: 0 };
    for (let j = 0; j < 3; j++) {
      const [v] = await Promise.all([limiter.check({ principal: 'victim' }), limiter.check({ principal: `unbounded-after-${j}` })]);
      if (v.results[0]?.source === 'local') after.local++;
      if (v.allowed) after.admitted++;
    }
    await limiter.close();
    const detail = JSON.stringify({ ...r, after });
    console.log(`key flood without keySlots: ${detail}`);
    expect(r.oomErrors, detail).toBeGreaterThan(0);
    expect(r.firstOomAt, detail).toBeDefined();
    expect(r.fallbacks, detail).toBeGreaterThan(0);
    expect(r.peakUsedMemory, detail).toBeGreaterThan(60 * 2 ** 20);
    // The recipient that had spent its 3 attempts is decided locally once Redis refuses writes, with a fresh budget.
    expect(after.local, detail).toBe(3);
    expect(after.admitted, detail).toBeGreaterThan(0);
  }, 60_000);

  it(`keySlots: ${SLOTS}: ${FLOOD_KEYS} invented keys keep Redis under the stated bound, with no OOM, and the spent key stays refused`, async () => {
    await redisCli((redis as RedisServer).port, 'flushall');
    const baseline = await usedMemory();
    const limiter = await setUp('bounded:', SLOTS);
    const bound = baseline + SLOTS * bytesPerKey(compileLimit(definition(SLOTS), 'limits[0]', new Set()));
    const r = await flood(limiter, 'bounded', FLOOD_KEYS, undefined, FLOOD_MS);
    await limiter.close();
    const dbsize = Number((await redisCli((redis as RedisServer).port, 'dbsize')).trim());
    const detail = JSON.stringify({ ...r, baseline, bound, dbsize, keysAtOom });
    console.log(`key flood with keySlots ${SLOTS}: ${detail}`);
    // As far as FLOOD_KEYS, or (time budget) at least 1.5x as far as the unbounded flood got before OOM,
    // with every slot in use: the keyspace is full, so no further key can add memory.
    expect(r.checks, detail).toBeGreaterThanOrEqual(Math.min(FLOOD_KEYS, 1.5 * (keysAtOom ?? FLOOD_KEYS)));
    expect(dbsize, detail).toBeGreaterThanOrEqual(SLOTS * 0.99);
    expect(r.oomErrors, detail).toBe(0);
    expect(r.peakUsedMemory, detail).toBeLessThanOrEqual(bound);
    expect(dbsize, detail).toBeLessThanOrEqual(SLOTS);
    // The legitimate key never got a fresh budget: refused, by the store, at every look.
    expect(r.victim.admitted, detail).toBe(0);
    expect(r.victim.otherwise, detail).toBe(0);
    expect(r.victim.refusedByStore, detail).toBeGreaterThanOrEqual(Math.floor(r.checks / 5000));
    // Every slot key holds one recipient's worth of state: invented keys that share a slot share its 3 attempts.
    expect((r.bySource.store ?? 0) + r.fallbacks, detail).toBe(r.checks);
    expect(r.fallbacks, detail).toBeLessThanOrEqual(r.checks * 0.001);
  }, 150_000);
});
