/**
 * Plans: limits that depend on the key. A key that keeps one plan decides
 * exactly as a plain limit with that plan's figures (every algorithm); a
 * plan change takes effect at the next check and carries the state the
 * algorithm can carry; an unknown plan is answered by the limit's fail mode,
 * never a throw; misconfigured plan tables are refused at construction with
 * the option's path.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CHANNELS, ConfigError, createLimiter, ManualClock, type AlgorithmName, type Decision, type LimitDefinition, type PlanErrorEvent } from '../../../packages/ratecontract/src/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const ALGOS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'];
const BUCKETS = new Set<AlgorithmName>(['token-bucket', 'leaky-bucket', 'gcra']);

function tenant(algorithm: AlgorithmName, extra: Partial<LimitDefinition> = {}): LimitDefinition {
  return {
    name: 'tenant', purpose: 'shedding', algorithm, limit: 2, window: '1m', key: 'header.x-tenant', plan: 'header.x-plan',
    plans: { free: {}, pro: BUCKETS.has(algorithm) ? { limit: 10, burst: 4 } : { limit: 10 }, batch: { limit: 100, window: '1h' } },
    ...extra,
  };
}

const ctx = (plan: string | undefined, t = 't1') => ({ headers: { 'x-tenant': t, ...(plan === undefined ? {} : { 'x-plan': plan }) } });

function figures(d: Decision): unknown {
  return { allowed: d.allowed, retryAfterMs: d.retryAfterMs, delayMs: d.delayMs, results: d.results.map((r) => [r.allowed, r.remaining, r.resetMs, r.retryAfterMs, r.limit, r.windowMs]) };
}

describe('plans: each plan decides with its own figures', () => {
  it.each(ALGOS)('%s: a key that keeps its plan decides exactly as a plain limit with that plan\'s figures', async (algorithm) => {
    const plans: Record<string, { limit: number; window: number; burst?: number }> = {
      free: { limit: 2, window: 1000 },
      pro: BUCKETS.has(algorithm) ? { limit: 7, window: 1000, burst: 3 } : { limit: 7, window: 1000 },
      slow: { limit: 3, window: 2500 },
    };
    let checks = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('free', 'pro', 'slow'),
        fc.array(fc.record({ dt: fc.integer({ min: 0, max: 1500 }), cost: fc.integer({ min: 1, max: 4 }), tenant: fc.constantFrom('a', 'b') }), { minLength: 1, maxLength: 30 }),
        async (plan, steps) => {
          const clock = new ManualClock(1_700_000_000_000);
          const withPlans = createLimiter({ clock, limits: [{ name: 't', purpose: 'shedding', algorithm, limit: 2, window: 1000, key: 'header.x-tenant', plan: 'header.x-plan', plans }] });
          const p = plans[plan] as { limit: number; window: number; burst?: number };
          const plain = createLimiter({ clock, limits: [{ name: 't', purpose: 'shedding', algorithm, limit: p.limit, window: p.window, key: 'header.x-tenant', ...(p.burst === undefined ? {} : { burst: p.burst }) }] });
          for (const s of steps) {
            clock.advance(s.dt);
            const c = ctx(plan, s.tenant);
            expect(figures(await withPlans.check(c, { cost: s.cost }))).toEqual(figures(await plain.check(c, { cost: s.cost })));
            checks++;
          }
        },
      ),
      fcBudget({ runs: 60, ms: 1500 }),
    );
    expect(checks).toBeGreaterThan(60);
  });

  it('decisions and checkSync report the plan\'s limit and window', () => {
    const limiter = createLimiter({ clock: new ManualClock(0), limits: [tenant('gcra')] });
    expect(limiter.checkSync(ctx('pro'))?.results[0]).toMatchObject({ limit: 10, windowMs: 60_000, remaining: 3 });
    expect(limiter.checkSync(ctx('batch', 't2'))?.results[0]).toMatchObject({ limit: 100, windowMs: 3_600_000 });
    expect(limiter.checkSync(ctx('free', 't3'))?.results[0]).toMatchObject({ limit: 2, windowMs: 60_000, remaining: 1 });
  });
});

describe('plans: a plan change takes effect at the next check', () => {
  it('fixed-window, sliding-window, sliding-log, concurrency: the count carries over', async () => {
    for (const algorithm of ['fixed-window', 'sliding-window', 'sliding-log', 'concurrency'] as const) {
      const clock = new ManualClock(60_000 * 1000);
      const limiter = createLimiter({ clock, limits: [tenant(algorithm)] });
      await limiter.check(ctx('free'));
      await limiter.check(ctx('free'));
      expect((await limiter.check(ctx('free'))).allowed, algorithm).toBe(false);
      // Upgraded: the two already counted stay counted against 10.
      expect((await limiter.check(ctx('pro'))).results[0], algorithm).toMatchObject({ allowed: true, remaining: 7 });
      // Downgraded again: 3 counted against 2.
      expect((await limiter.check(ctx('free'))).allowed, algorithm).toBe(false);
    }
  });

  it('gcra: the TAT is a time, so the used share of the window carries over and each plan reads it at its own rate', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ clock, limits: [tenant('gcra', { plans: { free: {}, pro: { limit: 10 } } })] });
    await limiter.check(ctx('free'));
    await limiter.check(ctx('free'));
    // free used up: TAT = now + 60 s = pro's whole tolerance (10 x 6 s) too; pro admits one per 6 s from here.
    const up = await limiter.check(ctx('pro'));
    expect(up).toMatchObject({ allowed: false, retryAfterMs: 6000 });
    clock.advance(6000);
    expect((await limiter.check(ctx('pro'))).allowed).toBe(true);
  });

  it('token-bucket: the tokens held carry over (within the new burst), refilled at the new rate from there', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ clock, limits: [tenant('token-bucket', { plans: { free: {}, pro: { limit: 10, burst: 4 } } })] });
    await limiter.check(ctx('free'));
    // One of free's 2 tokens left: pro starts from that one token, not from a full bucket of 4.
    expect((await limiter.check(ctx('pro'))).results[0]).toMatchObject({ allowed: true, remaining: 0 });
    expect((await limiter.check(ctx('pro'))).retryAfterMs).toBe(6000);
  });

  it('leaky-bucket: the level (what is in the bucket) carries over, drained at the new rate', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ clock, limits: [tenant('leaky-bucket', { plans: { free: {}, pro: { limit: 10, burst: 4 } } })] });
    await limiter.check(ctx('free'));
    // One in the bucket: pro's bucket of 4 has room for 3, so after this one, 2.
    expect((await limiter.check(ctx('pro'))).results[0]).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('a plan with another window keeps its own state: the key starts fresh there, and finds its old state on return', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ clock, limits: [tenant('fixed-window')] });
    await limiter.check(ctx('free'));
    await limiter.check(ctx('free'));
    expect((await limiter.check(ctx('batch'))).results[0]).toMatchObject({ allowed: true, remaining: 99 });
    expect((await limiter.check(ctx('free'))).allowed).toBe(false);
  });

  it('reset clears the key under every plan', async () => {
    const limiter = createLimiter({ clock: new ManualClock(0), limits: [tenant('fixed-window')] });
    await limiter.check(ctx('free'));
    await limiter.check(ctx('free'));
    await limiter.check(ctx('batch'));
    await limiter.reset('tenant', ctx('free'));
    expect((await limiter.peek(ctx('free'))).results[0]).toMatchObject({ remaining: 1 });
    expect((await limiter.peek(ctx('batch'))).results[0]).toMatchObject({ remaining: 99 });
  });
});

describe('plans: an unknown plan is answered by the fail mode', () => {
  it.each(['open', 'degraded', 'closed'] as const)('onError %s: never a throw, an event naming the plan, the limit\'s own figures', async (onError) => {
    const limiter = createLimiter({
      clock: new ManualClock(0),
      limits: [tenant('fixed-window', { onError, purpose: onError === 'closed' ? 'abuse' : 'shedding', ...(onError === 'open' ? { acknowledgeFailOpen: 'x' } : {}) })],
    });
    const events: PlanErrorEvent[] = [];
    const listener = (m: unknown): void => void events.push(m as PlanErrorEvent);
    subscribe(CHANNELS.planError, listener);
    try {
      const outcomes: Decision[] = [];
      for (let i = 0; i < 3; i++) outcomes.push(await limiter.check(ctx('platinum')));
      outcomes.push(await limiter.check(ctx(undefined)));
      expect(outcomes.map((d) => d.outcome)).toEqual(onError === 'open' ? ['fail-open', 'fail-open', 'fail-open', 'fail-open'] : ['degraded', 'degraded', 'rejected', 'rejected']);
      expect(outcomes[0]?.results[0]).toMatchObject({ onError, limit: 2 });
      expect(events).toHaveLength(4);
      expect(events[0]).toMatchObject({ limitName: 'tenant', plan: 'platinum', error: { code: 'RC_UNKNOWN_PLAN' } });
      expect(events[3]).toMatchObject({ plan: undefined });
      // The store's own state of the key was not touched.
      expect((await limiter.peek(ctx('free'))).results[0]).toMatchObject({ remaining: 1 });
      await expect(limiter.peek(ctx('platinum'))).rejects.toMatchObject({ code: 'RC_UNKNOWN_PLAN' });
    } finally {
      unsubscribe(CHANNELS.planError, listener);
    }
  });

  it('a plan function that throws is the same: the fail mode, and the error on the event', async () => {
    const limiter = createLimiter({
      limits: [{ ...tenant('gcra'), plan: () => { throw new Error('billing lookup failed'); } }],
    });
    const events: PlanErrorEvent[] = [];
    const listener = (m: unknown): void => void events.push(m as PlanErrorEvent);
    subscribe(CHANNELS.planError, listener);
    try {
      expect((await limiter.check(ctx('pro'))).outcome).toBe('degraded');
      expect(limiter.checkSync(ctx('pro'))?.outcome).toBe('degraded');
    } finally {
      unsubscribe(CHANNELS.planError, listener);
    }
    expect(events[0]).toMatchObject({ plan: undefined, error: { message: 'billing lookup failed' } });
  });
});

describe('plans: refused at construction, naming the option', () => {
  const base = tenant('gcra');
  it.each([
    [{ plans: { pro: { limt: 3 } } }, 'limits[0].plans.pro.limt', /did you mean "limit"/],
    [{ plans: { pro: { limit: 0 } } }, 'limits[0].plans.pro.limit', /positive integer/],
    [{ plans: { pro: { limit: 1.5 } } }, 'limits[0].plans.pro.limit', /positive integer/],
    [{ plans: { pro: { window: '1x' } } }, 'limits[0].plans.pro.window', /./],
    [{ plans: { pro: { burst: -1 } } }, 'limits[0].plans.pro.burst', /positive integer/],
    [{ plans: { Pro: {} } }, 'limits[0].plans.Pro', /\[a-z0-9_-\]/],
    [{ plans: { pro: 5 } }, 'limits[0].plans.pro', /object/],
    [{ plans: {} }, 'limits[0].plans', /object of plans/],
    [{ plans: [] }, 'limits[0].plans', /object of plans/],
    [{ plan: undefined }, 'limits[0].plan', /required with `plans`/],
    [{ plans: undefined }, 'limits[0].plan', /with `plans` only/],
    [{ plans: { pro: { limit: 2 ** 41, window: '1d' } } }, 'limits[0].plans.pro.window', /2\^40/],
    [{ limit: 5, cost: 3, plans: { pro: { limit: 10, burst: 2 } } }, 'limits[0].plans.pro.burst', /below the cost 3/],
    [{ algorithm: 'fixed-window', plans: { pro: { burst: 3 } } }, 'limits[0].plans.pro.burst', /does not apply to fixed-window/],
    [{ plan: 'cookie.x' }, 'limits[0].plan', /unknown key extractor/],
  ] as const)('%j -> %s', (patch, option, message) => {
    let error: unknown;
    try {
      createLimiter({ limits: [{ ...base, ...patch } as LimitDefinition] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).option).toBe(option);
    expect((error as ConfigError).message).toMatch(message);
  });
});
