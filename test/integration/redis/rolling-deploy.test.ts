/**
 * A rolling deploy across the state format change: processes of the release
 * before (format 1: text values, keys without a tag; the scripts and store
 * code of commit aade32d, in fixtures/state-v1/) and of this release (format
 * 2: packed doubles under `:v2:` keys) decide the same user keys on one Redis
 * at the same time.
 *
 * The rule (docs/redis.md, "Rolling deploys"): each state format has a key
 * namespace of its own, so the two never read each other's values. What
 * holds, tested here with both running at once:
 * - each format's processes decide exactly as the algorithm alone on their
 *   own checks (property, every algorithm): neither sees, resets or
 *   corrupts the other's state;
 * - so a key admits at most twice its bound while both run (N per window
 *   per format for a fixed window, N in flight per format for concurrency;
 *   checked with 2 x 50 checks in flight), and its bound again once the old
 *   processes are gone (their keys expire with their TTLs);
 * - and why not one shared namespace: the format-1 scripts read a format-2
 *   value as no state at all (they would over-admit) or fail.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { algorithms, type AlgorithmName, type CompiledLimit, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { createLimiter } from '../../../packages/ratecontract/src/index.js';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { formatOneKey } from '../../../packages/ratecontract/src/stores/redis/keys.js';
import { decodeState, encodeState } from '../../../packages/ratecontract/src/stores/redis/state-codec.js';
import { fcBudget } from '../../helpers/fc-budget.js';
import { FormatOneStore, formatOneStateKey } from './fixtures/state-v1/store.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

let server: RedisServer | undefined;
/** One connection per fleet, as two processes would have. */
let oldClient: Redis | undefined;
let newClient: Redis | undefined;

beforeAll(async () => {
  server = await startRedis();
  oldClient = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: true });
  newClient = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: true });
  await Promise.all([oldClient.connect(), newClient.connect()]);
}, 30_000);

afterAll(async () => {
  await oldClient?.quit();
  await newClient?.quit();
  await server?.stop();
}, 30_000);

const olds = (): Redis => oldClient as Redis;
const news = (): Redis => newClient as Redis;

const VARIANTS: ReadonlyArray<{ algorithm: AlgorithmName; queue?: boolean }> = [
  { algorithm: 'fixed-window' },
  { algorithm: 'sliding-window' },
  { algorithm: 'sliding-log' },
  { algorithm: 'token-bucket' },
  { algorithm: 'leaky-bucket' },
  { algorithm: 'leaky-bucket', queue: true },
  { algorithm: 'gcra' },
  { algorithm: 'concurrency' },
];

function limitOf(v: (typeof VARIANTS)[number], limit: number, window: number): CompiledLimit {
  return compileLimit(
    { name: 'deploy', purpose: 'abuse', algorithm: v.algorithm, limit, window, ...(v.queue === true ? { mode: 'queue' as const } : {}) },
    'limits[0]',
    new Set(),
  );
}

function figures(r: StoreOpResult | undefined): string {
  if (r === undefined) return 'none';
  return JSON.stringify([r.allowed, r.consumed, r.remaining, r.resetMs, r.retryAfterMs === Infinity ? 'Infinity' : r.retryAfterMs, r.delayMs]);
}

/** What one store answers for a one-op chain, by the pure algorithm (as runChain applies it). */
function reference(algorithm: AlgorithmName, limit: CompiledLimit, states: Map<string, unknown>, key: string, now: number, cost: number, leaseId: string | undefined): string {
  const algo = algorithms[algorithm];
  const r = algo.decide(states.get(key), now, cost, limit.params, leaseId);
  const consumed = r.allowed && cost > 0;
  if (consumed) {
    if (r.state === undefined) states.delete(key);
    else states.set(key, r.state);
  }
  return figures(
    consumed
      ? { allowed: true, consumed: true, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: 0, delayMs: r.delayMs }
      : { allowed: r.allowed, consumed: false, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, delayMs: 0 },
  );
}

interface Tick {
  readonly dt: number;
  readonly checks: ReadonlyArray<{ readonly fleet: 'old' | 'new'; readonly key: number; readonly cost: number }>;
}

describe('rolling deploy: format-1 and format-2 processes on one Redis at once', () => {
  for (const v of VARIANTS) {
    it(`${v.algorithm}${v.queue === true ? ' (queue)' : ''}: each format decides exactly as the algorithm alone on its own checks, so no key admits beyond twice its bound (property)`, async () => {
      const W = 1000;
      const ticks = fc.array(
        fc.record({
          dt: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 2 * W })),
          checks: fc.array(fc.record({ fleet: fc.constantFrom('old' as const, 'new' as const), key: fc.integer({ min: 0, max: 2 }), cost: fc.integer({ min: 0, max: 3 }) }), { minLength: 1, maxLength: 12 }),
        }),
        { minLength: 1, maxLength: 25 },
      );
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 6 }), ticks, async (n, plan: Tick[]) => {
          runs++;
          const limit = limitOf(v, n, W);
          const prefix = `deploy:${randomBytes(5).toString('hex')}:`;
          const fleets = {
            old: new FormatOneStore({ client: olds(), prefix, timeMode: 'client', ttlGraceMs: 600_000 }),
            new: redisStore({ client: news(), prefix, timeMode: 'client', ttlGraceMs: 600_000 }),
          };
          const states = { old: new Map<string, unknown>(), new: new Map<string, unknown>() };
          // Admitted cost per key and aligned window, both fleets together (fixed-window's union bound).
          const perWindow = new Map<string, number>();
          let now = 1_700_000_000_000;
          let lease = 0;
          for (const tick of plan) {
            now += tick.dt;
            const at = now;
            // Every check of a tick is in flight at once, old and new interleaved.
            const sent = tick.checks.map((c) => {
              const op: StoreOp = { spec: limit, key: `user-${c.key}`, cost: c.cost, leaseId: v.algorithm === 'concurrency' ? `l${lease++}` : undefined };
              return { c, op, reply: fleets[c.fleet].evaluate([op], at) };
            });
            const replies = await Promise.all(sent.map((s) => s.reply));
            // Each connection runs its fleet's checks in the order sent: replayed per fleet, in that order.
            sent.forEach((s, i) => {
              const want = reference(v.algorithm, limit, states[s.c.fleet], s.op.key, at, s.c.cost, s.op.leaseId);
              const got = figures(replies[i]?.[0]);
              if (got !== want) throw new Error(`${s.c.fleet} fleet, ${s.op.key} at ${at}, cost ${s.c.cost}: expected ${want}, got ${got}`);
              if (replies[i]?.[0]?.consumed === true) {
                const w = `${s.op.key}@${Math.floor(at / W)}`;
                perWindow.set(w, (perWindow.get(w) ?? 0) + s.c.cost);
              }
            });
          }
          if (v.algorithm === 'fixed-window') for (const [w, admitted] of perWindow) expect(admitted, w).toBeLessThanOrEqual(2 * n);
          // The two namespaces: format-1 keys hold text, format-2 keys hold packed doubles; no key is both.
          const keys = (await news().keys(`${prefix}*`)).sort();
          for (const key of keys) {
            const value = (await news().getBuffer(key));
            if (value === null) continue;
            if (key.includes(':v2:')) expect(() => decodeState(v.algorithm, value), key).not.toThrow();
            else expect(value.toString('latin1'), key).toMatch(/^[-0-9 :l]+$/);
          }
        }),
        fcBudget({ runs: 60, ms: 1500, minRuns: 10 }),
      );
      expect(runs).toBeGreaterThan(5);
    });
  }

  it('2 x 50 checks in flight on one key, fixed window of 10: each format admits exactly 10, together 20 (twice the bound, not more)', async () => {
    const limit = limitOf({ algorithm: 'fixed-window' }, 10, 60_000);
    const prefix = `deploy-flight:${randomBytes(5).toString('hex')}:`;
    const old = new FormatOneStore({ client: olds(), prefix, timeMode: 'server' });
    const fresh = redisStore({ client: news(), prefix, timeMode: 'server' });
    // Server time: both fleets decide at Redis's clock, in one aligned minute unless the run straddles a boundary.
    const [sec] = (await news().time()) as unknown as [string];
    if (Number(sec) % 60 > 55) await new Promise((r) => setTimeout(r, 6000));
    const op = (): StoreOp => ({ spec: limit, key: 'hot', cost: 1, leaseId: undefined });
    const [a, b] = await Promise.all([
      Promise.all(Array.from({ length: 50 }, () => old.evaluate([op()], 0))),
      Promise.all(Array.from({ length: 50 }, () => fresh.evaluate([op()], 0))),
    ]);
    const admitted = (rs: ReadonlyArray<readonly StoreOpResult[]>): number => rs.filter((r) => r[0]?.allowed === true).length;
    expect([admitted(a), admitted(b)]).toEqual([10, 10]);
  });

  it('concurrency, 2 x 50 checks in flight: each format holds at most N leases, together 2N; the new one admits again as its own leases are released', async () => {
    const limit = limitOf({ algorithm: 'concurrency' }, 5, 60_000);
    const prefix = `deploy-lease:${randomBytes(5).toString('hex')}:`;
    const old = new FormatOneStore({ client: olds(), prefix, timeMode: 'server' });
    const fresh = redisStore({ client: news(), prefix, timeMode: 'server' });
    const ops = (tag: string): StoreOp[] => Array.from({ length: 50 }, (_, i) => ({ spec: limit, key: 'pool', cost: 1, leaseId: `${tag}-${i}` }));
    const oldOps = ops('old');
    const newOps = ops('new');
    const [a, b] = await Promise.all([Promise.all(oldOps.map((op) => old.evaluate([op], 0))), Promise.all(newOps.map((op) => fresh.evaluate([op], 0)))]);
    const held = (rs: ReadonlyArray<readonly StoreOpResult[]>, list: StoreOp[]): StoreOp[] => list.filter((_, i) => rs[i]?.[0]?.allowed === true);
    const oldHeld = held(a, oldOps);
    const newHeld = held(b, newOps);
    expect([oldHeld.length, newHeld.length]).toEqual([5, 5]);
    // Releasing an old lease frees room in the old namespace only.
    await old.release(oldHeld[0] as StoreOp, 0);
    expect((await fresh.evaluate([{ spec: limit, key: 'pool', cost: 1, leaseId: 'new-late' }], 0))[0]?.allowed).toBe(false);
    expect((await old.evaluate([{ spec: limit, key: 'pool', cost: 1, leaseId: 'old-late' }], 0))[0]?.allowed).toBe(true);
    await fresh.release(newHeld[0] as StoreOp, 0);
    expect((await fresh.evaluate([{ spec: limit, key: 'pool', cost: 1, leaseId: 'new-later' }], 0))[0]?.allowed).toBe(true);
  });

  it('limiter.reset on a format-2 process clears the key in both namespaces (a reset mid-deploy reaches the old processes too)', async () => {
    const prefix = `deploy-reset:${randomBytes(5).toString('hex')}:`;
    const store = redisStore({ client: news(), prefix });
    const limiter = createLimiter({ defaultStore: store, limits: [{ name: 'otp', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: 60_000, key: 'principal' }] });
    try {
      const id = limiter.limits[0]?.id as string;
      const old = new FormatOneStore({ client: olds(), prefix, timeMode: 'server' });
      // The keys of format 1 are what the fixture's (the old release's) code computes.
      expect(formatOneKey(prefix, id, 'alice', undefined)).toBe(formatOneStateKey(prefix, id, 'alice'));
      expect(store.keyFor(id, 'alice')).toBe(formatOneStateKey(prefix, id, 'alice').replace(`${id}:`, `${id}:v2:`));
      const compiled = limiter.limits[0] as CompiledLimit;
      expect((await old.evaluate([{ spec: compiled, key: 'alice', cost: 1, leaseId: undefined }], 0))[0]?.allowed).toBe(true);
      expect((await limiter.check({ principal: 'alice' })).allowed).toBe(true);
      expect(await news().exists(formatOneStateKey(prefix, id, 'alice'), store.keyFor(id, 'alice'))).toBe(2);
      await limiter.reset('otp', { principal: 'alice' });
      expect(await news().exists(formatOneStateKey(prefix, id, 'alice'), store.keyFor(id, 'alice'))).toBe(0);
      expect((await old.evaluate([{ spec: compiled, key: 'alice', cost: 1, leaseId: undefined }], 0))[0]?.allowed).toBe(true);
    } finally {
      await limiter.close();
    }
  });

  it('why not one namespace: the format-1 scripts read a format-2 value as no state (fixed-window, concurrency: they would admit again) or fail (gcra)', async () => {
    const prefix = `deploy-shared:${randomBytes(5).toString('hex')}:`;
    const old = new FormatOneStore({ client: olds(), prefix, timeMode: 'client', ttlGraceMs: 600_000 });
    const now = 1_700_000_000_000;
    const fixed = limitOf({ algorithm: 'fixed-window' }, 3, 60_000);
    // A full window (3 of 3) in format 2, under the key a format-1 process would read.
    await olds().set(old.keyFor(fixed.id, 'k'), Buffer.from(encodeState('fixed-window', { w: Math.floor(now / 60_000) * 60_000, c: 3 })), 'PX', 600_000);
    expect((await old.evaluate([{ spec: fixed, key: 'k', cost: 1, leaseId: undefined }], now))[0]).toMatchObject({ allowed: true, remaining: 2 });
    const pool = limitOf({ algorithm: 'concurrency' }, 1, 60_000);
    await olds().set(old.keyFor(pool.id, 'k'), Buffer.from(encodeState('concurrency', [{ exp: now + 60_000, cost: 1, id: 'held' }])), 'PX', 600_000);
    expect((await old.evaluate([{ spec: pool, key: 'k', cost: 1, leaseId: 'x' }], now))[0]?.allowed).toBe(true);
    const gcra = limitOf({ algorithm: 'gcra' }, 3, 60_000);
    await olds().set(old.keyFor(gcra.id, 'k'), Buffer.from(encodeState('gcra', { t: now + 60_000, f: 0 })), 'PX', 600_000);
    await expect(old.evaluate([{ spec: gcra, key: 'k', cost: 1, leaseId: undefined }], now)).rejects.toThrow();
  });
});
