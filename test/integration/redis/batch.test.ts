/**
 * Batching in the Redis store: checks issued in the same tick go out as one
 * chain.lua call, and that call decides exactly as the same checks would one
 * by one, in issue order, each chain still all-or-nothing.
 *
 * The property compares a batched Redis limiter (client-time mode, a manual
 * clock) with a memory-store limiter that gets the same checks sequentially.
 * Time-budgeted: RC_PROPERTY_BUDGET_MS / 2 (default 6 s, 15 s with RC_TEST_TIER=full).
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, createLimiter, ManualClock, memoryStore, type AlgorithmName, type Decision, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { connectStandalone, useStandaloneIoredis } from './helpers/clients.js';
import { FULL_BUDGETS } from '../../helpers/tier.js';

const BUDGET_MS = Math.floor(Number(process.env.RC_PROPERTY_BUDGET_MS ?? (FULL_BUDGETS ? 30_000 : 12_000)) / 2);
const ioredis = useStandaloneIoredis({ beforeAll, afterAll });
const raw = (): Redis => ioredis().client as Redis;

async function evalshaCalls(): Promise<number> {
  const info = await raw().info('commandstats');
  const m = /cmdstat_evalsha:calls=(\d+)/.exec(info);
  return m === null ? 0 : Number(m[1]);
}

const prefix = (): string => `batch:${randomBytes(4).toString('hex')}:`;

function view(d: Decision) {
  return {
    allowed: d.allowed,
    status: d.status,
    outcome: d.outcome,
    limit: d.limitName,
    retryAfterMs: d.retryAfterMs,
    delayMs: d.delayMs,
    results: d.results.map((r) => ({ name: r.name, allowed: r.allowed, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, source: r.source })),
  };
}

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'];

interface LimitSpec {
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly window: number;
  readonly burst: number | undefined;
  readonly queue: boolean;
  readonly shadow: boolean;
  readonly countRejected: boolean;
  readonly key: 'header.user' | 'global';
}

const limitArb: fc.Arbitrary<LimitSpec> = fc.record({
  algorithm: fc.constantFrom(...ALGORITHMS),
  limit: fc.integer({ min: 1, max: 6 }),
  window: fc.constantFrom(1, 7, 100, 1000, 60_000),
  burst: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
  queue: fc.boolean(),
  shadow: fc.boolean(),
  countRejected: fc.boolean(),
  key: fc.constantFrom<'header.user' | 'global'>('header.user', 'global'),
});

function definition(l: LimitSpec, i: number): LimitDefinition {
  const usesBurst = l.algorithm === 'token-bucket' || l.algorithm === 'gcra' || l.algorithm === 'leaky-bucket';
  return {
    name: `l${i}`,
    purpose: 'shedding',
    algorithm: l.algorithm,
    limit: l.limit,
    window: l.window,
    key: l.key,
    shadow: l.shadow,
    countRejected: l.countRejected,
    ...(usesBurst && l.burst !== undefined ? { burst: l.burst } : {}),
    ...(l.algorithm === 'leaky-bucket' && l.queue ? { mode: 'queue' as const } : {}),
  };
}

const roundArb = fc.record({
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 2000 })),
  checks: fc.array(fc.record({ user: fc.constantFrom('a', 'b', 'c'), cost: fc.integer({ min: 1, max: 5 }) }), { minLength: 1, maxLength: 12 }),
});

describe('redis store batching', () => {
  it('checks of one tick go out as one script call, in issue order; maxChecks (default 16) splits them; batch: false sends one each', async () => {
    const limits: LimitDefinition[] = [{ name: 'n7', purpose: 'abuse', algorithm: 'fixed-window', limit: 7, window: '1h', key: 'global' }];
    const run = async (batch: false | { maxChecks: number } | undefined) => {
      const limiter = createLimiter({ limits, defaultStore: redisStore({ client: ioredis().client, prefix: prefix(), deadlineMs: 5000, ...(batch === undefined ? {} : { batch }) }) });
      const before = await evalshaCalls();
      const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.check({})));
      return { calls: (await evalshaCalls()) - before, decisions };
    };
    const one = await run({ maxChecks: 64 });
    expect(one.calls).toBe(1);
    // Issue order is decision order: the first 7 admitted with remaining 6..0, the rest rejected.
    expect(one.decisions.map((d) => d.allowed)).toEqual([...Array<boolean>(7).fill(true), ...Array<boolean>(13).fill(false)]);
    expect(one.decisions.slice(0, 7).map((d) => d.results[0]?.remaining)).toEqual([6, 5, 4, 3, 2, 1, 0]);
    expect(one.decisions.slice(7).every((d) => d.status === 503 && d.retryAfterMs > 0)).toBe(true);
    expect((await run({ maxChecks: 8 })).calls).toBe(3);
    const byDefault = await run(undefined);
    expect(byDefault.calls).toBe(2);
    expect(byDefault.decisions.map((d) => d.allowed)).toEqual(one.decisions.map((d) => d.allowed));
    const unbatched = await run(false);
    expect(unbatched.calls).toBe(20);
    expect(unbatched.decisions.map((d) => d.allowed)).toEqual(one.decisions.map((d) => d.allowed));
  });

  it('with node-redis (which writes one tick\'s commands together) the default batch is 64 checks', async () => {
    const nodeRedis = await connectStandalone('node-redis', raw().options.port as number);
    try {
      const limiter = createLimiter({
        limits: [{ name: 'n', purpose: 'shedding', algorithm: 'fixed-window', limit: 1000, window: '1h', key: 'global' }],
        defaultStore: redisStore({ client: nodeRedis.client, prefix: prefix(), deadlineMs: 5000 }),
      });
      const before = await evalshaCalls();
      const ds = await Promise.all(Array.from({ length: 40 }, () => limiter.check({})));
      expect((await evalshaCalls()) - before).toBe(1);
      expect(ds.map((d) => d.results[0]?.remaining)).toEqual(Array.from({ length: 40 }, (_, i) => 999 - i));
    } finally {
      await nodeRedis.close();
    }
  });

  it('a rejected chain in a batch consumes nothing, while the chains around it do', async () => {
    const limiter = createLimiter({
      limits: [
        { name: 'user', purpose: 'abuse', algorithm: 'fixed-window', limit: 5, window: '1h', key: 'header.user' },
        { name: 'all', purpose: 'shedding', algorithm: 'fixed-window', limit: 3, window: '1h', key: 'global' },
      ],
      defaultStore: redisStore({ client: ioredis().client, prefix: prefix(), deadlineMs: 5000 }),
    });
    const before = await evalshaCalls();
    const ds = await Promise.all(Array.from({ length: 6 }, () => limiter.check({ headers: { user: 'u' } })));
    expect((await evalshaCalls()) - before).toBe(1);
    expect(ds.map((d) => d.allowed)).toEqual([true, true, true, false, false, false]);
    expect(ds.map((d) => d.limitName)).toEqual([undefined, undefined, undefined, 'all', 'all', 'all']);
    // The per-user limit was charged for the 3 admitted chains only.
    expect(ds.map((d) => d.results[0]?.remaining)).toEqual([4, 3, 2, 2, 2, 2]);
  });

  it('a batch that misses its deadline fails every check in it, each to its own fail mode', async () => {
    const limiter = createLimiter({
      limits: [{ name: 'shed', purpose: 'shedding', onError: 'degraded', algorithm: 'fixed-window', limit: 100, window: '1h', key: 'global' }],
      defaultStore: redisStore({ client: ioredis().client, prefix: prefix(), deadlineMs: 40 }),
    });
    await raw().call('CLIENT', 'PAUSE', '400', 'ALL');
    const ds = await Promise.all(Array.from({ length: 10 }, () => limiter.check({})));
    expect(ds.map((d) => d.outcome)).toEqual(Array<string>(10).fill('degraded'));
    expect(ds.every((d) => d.results[0]?.source === 'local')).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 450));
  });

  it('rejects an invalid batch option at construction, naming it', () => {
    const client = ioredis().client;
    expect(() => redisStore({ client, batch: { maxChecks: 0 } })).toThrow(ConfigError);
    expect(() => redisStore({ client, batch: { maxChecks: 0 } })).toThrow(/redisStore\.batch\.maxChecks/);
    expect(() => redisStore({ client, batch: { maxChecks: 1.5 } })).toThrow(/redisStore\.batch\.maxChecks/);
    expect(() => redisStore({ client, batch: { maxChecks: 5000 } })).toThrow(/redisStore\.batch\.maxChecks/);
    expect(() => redisStore({ client, batch: true as never })).toThrow(/redisStore\.batch/);
    expect(() => redisStore({ client, batch: { maxChecks: 1 } })).not.toThrow();
  });
  // Last: fast-check may leave its interrupted run finishing in the background.
  it('a batch decides exactly as the same checks one by one (property, against the memory store)', async () => {
    let rounds = 0;
    let batchedChecks = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(limitArb, { minLength: 1, maxLength: 3 }), fc.array(roundArb, { minLength: 1, maxLength: 8 }), async (ls, plan) => {
        const limits = ls.map((l, i) => definition(l, i));
        const start = 1_700_000_000_000;
        const redisClock = new ManualClock(start);
        const memClock = new ManualClock(start);
        const batched = createLimiter({
          limits,
          defaultStore: redisStore({ client: ioredis().client, prefix: prefix(), timeMode: 'client', ttlGraceMs: 3_600_000, deadlineMs: 5000 }),
          clock: redisClock,
        });
        const sequential = createLimiter({ limits, defaultStore: memoryStore(), clock: memClock });
        for (const round of plan) {
          redisClock.advance(round.dt);
          memClock.advance(round.dt);
          const got = await Promise.all(round.checks.map((c) => batched.check({ headers: { user: c.user } }, { cost: c.cost })));
          const want: Decision[] = [];
          for (const c of round.checks) want.push(await sequential.check({ headers: { user: c.user } }, { cost: c.cost }));
          expect(got.map(view)).toEqual(want.map(view));
          rounds++;
          if (round.checks.length > 1) batchedChecks += round.checks.length;
        }
      }),
      { numRuns: 10_000, interruptAfterTimeLimit: BUDGET_MS, markInterruptAsFailure: false },
    );
    // A starved run must not pass silently.
    expect(rounds).toBeGreaterThan(20);
    expect(batchedChecks).toBeGreaterThan(50);
  }, BUDGET_MS + 30_000);
});
