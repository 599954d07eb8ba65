/**
 * peek, reset and plans on the Redis store, standalone and Cluster:
 * - peek then check agree at the same instant (client time), every
 *   algorithm, alone and in a chain spread over hash slots;
 * - peek.lua in server time is the twin of the TypeScript algorithms on the
 *   stored state at the instant the script read the clock;
 * - a peek writes nothing, refreshes no TTL, takes no lease;
 * - reset deletes the key's state (every plan's), on both topologies;
 * - a limiter with plans on Redis decides exactly as one on the memory
 *   store, plan changes and batches of different plans included;
 * - a key shared by plans lives until none of them needs it.
 * Time-budgeted: the properties share RC_PROPERTY_BUDGET_MS / 2 (default 6 s).
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { algorithms, createLimiter, ManualClock, StoreError, type AlgorithmName, type Decision, type LimitDefinition, type StoreOp } from '../../../packages/ratecontract/src/index.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { decodePeekReply, peekArgs } from '../../../packages/ratecontract/src/stores/redis/codec.js';
import { decodeState } from '../../../packages/ratecontract/src/stores/redis/state-codec.js';
import { peekScript } from '../../../packages/ratecontract/src/stores/redis/scripts.generated.js';
import { fcBudget } from '../../helpers/fc-budget.js';
import { FULL_BUDGETS } from '../../helpers/tier.js';
import { connectCluster, connectStandalone, type TestClient } from './helpers/clients.js';
import { freePort, redisCli, startCluster, startRedis, type RedisClusterServers, type RedisServer } from './helpers/redis-server.js';

const BUDGET_MS = Number(process.env.RC_PROPERTY_BUDGET_MS ?? (FULL_BUDGETS ? 30_000 : 12_000)) / 2;
const ALGOS: ReadonlyArray<{ algorithm: AlgorithmName; queue?: boolean }> = [
  { algorithm: 'fixed-window' },
  { algorithm: 'sliding-window' },
  { algorithm: 'sliding-log' },
  { algorithm: 'token-bucket' },
  { algorithm: 'leaky-bucket' },
  { algorithm: 'leaky-bucket', queue: true },
  { algorithm: 'gcra' },
  { algorithm: 'concurrency' },
];
const PER_ALGO_MS = Math.max(600, Math.floor(BUDGET_MS / (2 * ALGOS.length)));
const BUCKETS = new Set<AlgorithmName>(['token-bucket', 'leaky-bucket', 'gcra']);
/** Store deadline for limiter-driven comparisons: a call that misses the default 20 ms on a loaded host would be decided by its fail mode and differ for that reason alone. */
const SLOW_HOST_MS = 5000;

let server: RedisServer | undefined;
let cluster: RedisClusterServers | undefined;
let standalone: TestClient | undefined;
let clustered: TestClient | undefined;

beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedis(), startCluster()]);
  standalone = await connectStandalone('ioredis', server.port);
  clustered = await connectCluster('ioredis', cluster.ports);
}, 60_000);

afterAll(async () => {
  await Promise.all([standalone?.close(), clustered?.close()]);
  await Promise.all([server?.stop(), cluster?.stop()]);
}, 30_000);

const io = (): Redis => standalone?.client as Redis;
const prefix = (): string => `prp:${randomBytes(5).toString('hex')}:`;

function limitOf(v: (typeof ALGOS)[number], name: string, limit: number, window: number, key = 'ip'): LimitDefinition {
  return {
    name, purpose: 'shedding', algorithm: v.algorithm, limit, window, key: key as LimitDefinition['key'],
    ...(BUCKETS.has(v.algorithm) ? { burst: limit + 1 } : {}), ...(v.queue === true ? { mode: 'queue' as const } : {}),
  };
}

function figures(d: Decision): unknown {
  return {
    allowed: d.allowed, outcome: d.outcome, retryAfterMs: d.retryAfterMs, delayMs: d.delayMs,
    results: d.results.map((r) => [r.name, r.allowed, r.remaining, r.resetMs, r.retryAfterMs, r.limit, r.windowMs, r.source]),
  };
}

const stepArb = fc.record({
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 30 }), fc.integer({ min: 0, max: 2500 })),
  ip: fc.constantFrom('a', 'b'),
  cost: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: 3 }) }, { weight: 1, arbitrary: fc.constant(40) }),
});

describe.each(['standalone', 'cluster'] as const)('peek on %s Redis (client time)', (topology) => {
  it.each(ALGOS.map((v) => [`${v.algorithm}${v.queue === true ? ' (queue)' : ''}`, v] as const))(
    '%s: peek then check agree at the same instant, alone and in a chain across slots; the twin that never peeks decides the same',
    async (_label, v) => {
      let steps = 0;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.boolean(), fc.array(stepArb, { minLength: 1, maxLength: 25 }), async (limit, chain, script) => {
          const client = (topology === 'cluster' ? clustered : standalone)?.client as Redis;
          const defs = [limitOf(v, 'first', limit, 1000), ...(chain ? [limitOf({ algorithm: 'gcra' }, 'second', limit + 1, 700)] : [])];
          const clock = new ManualClock(1_700_000_000_000);
          const make = (): ReturnType<typeof createLimiter> =>
            createLimiter({ clock, defaultStore: redisStore({ client, prefix: prefix(), timeMode: 'client', ttlGraceMs: 600_000, deadlineMs: SLOW_HOST_MS }), limits: defs });
          const peeking = make();
          const twin = make();
          for (const step of script) {
            clock.advance(step.dt);
            const options = { cost: step.cost };
            const announced = await peeking.peek({ ip: step.ip }, options);
            const decided = await peeking.check({ ip: step.ip }, options);
            const alone = await twin.check({ ip: step.ip }, options);
            expect(figures(announced)).toEqual(figures(decided));
            expect(figures(alone)).toEqual(figures(decided));
            steps++;
          }
        }),
        fcBudget({ runs: 40, ms: PER_ALGO_MS, minRuns: 3 }),
      );
      expect(steps).toBeGreaterThan(10);
    },
    30_000,
  );
});

describe('peek.lua in server time', () => {
  it.each(ALGOS.map((v) => [`${v.algorithm}${v.queue === true ? ' (queue)' : ''}`, v] as const))(
    '%s: the twin of the TypeScript algorithm on the stored state, at the instant the script read',
    async (_label, v) => {
      const limit = compileLimit(limitOf(v, 'srv', 3, 400), 'limits[0]', new Set());
      const store = redisStore({ client: io(), prefix: prefix() });
      let compared = 0;
      for (let i = 0; i < 60; i++) {
        const cost = [0, 1, 1, 2, 5][i % 5] as number;
        const op: StoreOp = { spec: limit, key: `k${i % 2}`, cost, leaseId: v.algorithm === 'concurrency' ? `l${i}` : undefined };
        if (i % 3 !== 2) await store.evaluate([{ ...op, cost: 1 }], 0);
        const key = store.keyFor(limit.id, op.key);
        const before = await io().getBuffer(key);
        const reply = decodePeekReply(await io().eval(peekScript.text, 1, key, ...peekArgs([op], undefined)), 1);
        expect(await io().getBuffer(key)).toEqual(before);
        const state = before === null ? undefined : decodeState(limit.algorithm, before);
        const algo = algorithms[limit.algorithm];
        const want = algo.decide(state, reply.now, cost, limit.params, op.leaseId);
        const zero = algo.decide(state, reply.now, 0, limit.params, op.leaseId);
        const got = reply.results[0];
        expect(got).toEqual({
          allowed: want.allowed,
          consumed: want.allowed && cost > 0,
          remaining: want.remaining,
          resetMs: want.resetMs,
          retryAfterMs: want.allowed ? 0 : want.retryAfterMs,
          delayMs: want.allowed ? want.delayMs : 0,
          peekRemaining: zero.remaining,
          peekResetMs: zero.resetMs,
        });
        compared++;
        if (i % 7 === 0) await new Promise((r) => setTimeout(r, 30));
      }
      expect(compared).toBe(60);
    },
  );
});

describe('a peek changes nothing', () => {
  it('no write, no TTL refresh, no lease taken', async () => {
    const p = prefix();
    const store = redisStore({ client: io(), prefix: p, deadlineMs: SLOW_HOST_MS });
    const limiter = createLimiter({
      defaultStore: store,
      limits: [
        { name: 'g', purpose: 'shedding', limit: 5, window: '1h', key: 'ip' },
        { name: 'c', purpose: 'shedding', algorithm: 'concurrency', limit: 1, window: '1h', key: 'ip' },
      ],
    });
    const first = await limiter.check({ ip: 'x' });
    await first.release();
    const gKey = store.keyFor(limiter.limits[0]?.id as string, 'x');
    const cKey = store.keyFor(limiter.limits[1]?.id as string, 'x');
    const value = await io().get(gKey);
    const ttl = await io().pttl(gKey);
    await new Promise((r) => setTimeout(r, 40));
    for (let i = 0; i < 5; i++) expect((await limiter.peek({ ip: 'x' })).allowed).toBe(true);
    expect(await io().get(gKey)).toBe(value);
    expect(await io().pttl(gKey)).toBeLessThanOrEqual(ttl - 30);
    expect(await io().exists(cKey)).toBe(0);
    // The concurrency slot is free for a real check after all those peeks.
    expect((await limiter.check({ ip: 'x' })).allowed).toBe(true);
  });
});

describe.each(['standalone', 'cluster'] as const)('reset on %s Redis', (topology) => {
  it('deletes the key\'s state under the limit, every plan\'s, and nothing else', async () => {
    const client = (topology === 'cluster' ? clustered : standalone)?.client as Redis;
    const store = redisStore({ client, prefix: prefix(), deadlineMs: SLOW_HOST_MS });
    const limiter = createLimiter({
      defaultStore: store,
      limits: [
        { name: 'login', purpose: 'abuse', limit: 2, window: '15m', key: 'principal', plan: 'header.x-plan', plans: { basic: {}, long: { window: '1h' } } },
        { name: 'ip', purpose: 'shedding', limit: 3, window: '15m', key: 'ip' },
      ],
    });
    // alice (5 letters) and carol share an address, bob has his own.
    const ctx = (principal: string, plan = 'basic') => ({ principal, ip: `198.51.100.${principal.length}`, headers: { 'x-plan': plan } });
    for (const who of ['alice', 'bob']) {
      await limiter.check(ctx(who, 'basic'));
      await limiter.check(ctx(who, 'long'));
    }
    expect((await limiter.peek(ctx('alice', 'long'))).results[0]).toMatchObject({ remaining: 0 });
    await limiter.reset('login', ctx('alice'), { by: 'test' });
    expect((await limiter.peek(ctx('alice', 'basic'))).results[0]).toMatchObject({ remaining: 1 });
    expect((await limiter.peek(ctx('alice', 'long'))).results[0]).toMatchObject({ remaining: 1 });
    expect((await limiter.peek(ctx('bob', 'long'))).results[0]).toMatchObject({ remaining: 0 });
    // The ip limit was not reset: alice's address has used 2 of its 3.
    expect((await limiter.peek(ctx('carol'))).results[1]).toMatchObject({ allowed: true, remaining: 0 });
  });
});

describe('peek and reset against a Redis that is gone', () => {
  it('reject with a StoreError naming the store, within the operator deadline', async () => {
    const port = await freePort();
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      const limiter = createLimiter({ defaultStore: redisStore({ client, startupWaitMs: 0 }), limits: [{ name: 'l', purpose: 'shedding', limit: 1, window: '1m', key: 'ip' }] });
      const started = Date.now();
      await expect(limiter.peek({ ip: 'a' })).rejects.toBeInstanceOf(StoreError);
      const reset = await limiter.reset('l', { ip: 'a' }).then(() => undefined, (e: unknown) => e);
      expect(reset).toBeInstanceOf(StoreError);
      expect((reset as StoreError).store).toBe('(default)');
      expect((reset as StoreError).code).toMatch(/^RC_STORE_(FAILURE|TIMEOUT)$/);
      expect(Date.now() - started).toBeLessThan(2500);
      // A check still decides (its fail mode), as ever.
      expect((await limiter.check({ ip: 'a' })).outcome).toBe('degraded');
    } finally {
      client.disconnect();
    }
  });
});

describe('plans on Redis', () => {
  const PLANS = ['free', 'pro', 'slow'] as const;
  it.each(ALGOS.filter((v) => v.queue !== true).map((v) => [v.algorithm, v] as const))(
    '%s: decides exactly as the memory store, plan changes and batches of several plans included',
    async (_label, v) => {
      const def: LimitDefinition = {
        ...limitOf(v, 'tenant', 2, 1000, 'header.x-tenant'),
        plan: 'header.x-plan',
        plans: { free: {}, pro: BUCKETS.has(v.algorithm) ? { limit: 6, burst: 4 } : { limit: 6 }, slow: { limit: 3, window: 2500 } },
      };
      let checks = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ dt: fc.integer({ min: 0, max: 1200 }), batch: fc.array(fc.record({ tenant: fc.constantFrom('a', 'b', 'c'), plan: fc.constantFrom(...PLANS), cost: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 4 }) }), { minLength: 1, maxLength: 15 }),
          async (script) => {
            const clock = new ManualClock(1_700_000_000_000);
            const onRedis = createLimiter({ clock, defaultStore: redisStore({ client: io(), prefix: prefix(), timeMode: 'client', ttlGraceMs: 600_000, deadlineMs: SLOW_HOST_MS }), limits: [def] });
            const inMemory = createLimiter({ clock, limits: [def] });
            for (const step of script) {
              clock.advance(step.dt);
              const ctxs = step.batch.map((b) => ({ headers: { 'x-tenant': b.tenant, 'x-plan': b.plan } }));
              // Sent together: one batched script call with a spec per plan.
              const got = await Promise.all(ctxs.map((c, i) => onRedis.check(c, { cost: step.batch[i]?.cost as number })));
              const wanted: Decision[] = [];
              for (let i = 0; i < ctxs.length; i++) {
                const want = await inMemory.check(ctxs[i] as object, { cost: step.batch[i]?.cost as number });
                wanted.push(want);
                expect(figures(got[i] as Decision)).toEqual(figures(want));
                checks++;
              }
              await Promise.all([...got, ...wanted].map((d) => d.release()));
            }
          },
        ),
        fcBudget({ runs: 30, ms: PER_ALGO_MS, minRuns: 3 }),
      );
      expect(checks).toBeGreaterThan(20);
    },
    30_000,
  );

  it('a key shared by plans lives until no sharing plan needs it (server time, the TTL is real)', async () => {
    const limiter = createLimiter({
      defaultStore: redisStore({ client: io(), prefix: prefix(), deadlineMs: SLOW_HOST_MS }),
      limits: [{ name: 'q', purpose: 'shedding', algorithm: 'leaky-bucket', limit: 1, window: '1s', burst: 2, key: 'ip', plan: 'header.x-plan', plans: { slow: {}, fast: { limit: 20, burst: 40 } } }],
    });
    const ctx = (plan: string) => ({ ip: 'k', headers: { 'x-plan': plan } });
    // Two in the bucket under the fast plan: it drains them in 100 ms, the slow plan in 2 s.
    expect((await limiter.check(ctx('fast'), { cost: 2 })).allowed).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    // Under the slow plan about 1.7 are still in a bucket of 2: a cost of 2 does not fit (a key expired at the fast plan's TTL would admit it).
    expect((await limiter.check(ctx('slow'), { cost: 2 })).allowed).toBe(false);
  });
});

describe('the Redis used by these tests', () => {
  it('is the test server, never 6379', async () => {
    expect(server?.port).not.toBe(6379);
    expect(await redisCli(server?.port as number, 'PING')).toContain('PONG');
  });
});
