import { describe, expect, it } from 'vitest';
import { ConfigError, createLimiter, ManualClock, MemoryStore, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';

const login = (algorithm: LimitDefinition['algorithm'] = 'gcra'): LimitDefinition => ({
  name: 'login', purpose: 'abuse', algorithm, limit: 5, window: '15m', key: 'principal', count: 'failures',
});
const ALGOS = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra'] as const;

describe("count: 'failures'", () => {
  it.each(ALGOS)('%s: successes are given back, failures stay counted, at most N admitted before any settles', async (algorithm) => {
    const clock = new ManualClock(1_700_000_000_000);
    const limiter = createLimiter({ clock, limits: [login(algorithm)] });
    for (let i = 0; i < 100; i++) {
      const d = await limiter.check({ principal: 'alice' });
      expect(d.allowed, `success ${i}`).toBe(true);
      await d.settle('success');
      clock.advance(1);
    }
    // 50 attempts in flight at once, none settled yet: only 5 admitted.
    const inFlight = await Promise.all(Array.from({ length: 50 }, () => limiter.check({ principal: 'bob' })));
    expect(inFlight.filter((d) => d.allowed)).toHaveLength(5);
    await Promise.all(inFlight.map((d) => d.settle('failure')));
    expect((await limiter.check({ principal: 'bob' })).allowed).toBe(false);
  });

  it('settle is idempotent: a second success refunds nothing more; failure then success keeps the count', async () => {
    const store = new MemoryStore();
    const limiter = createLimiter({ defaultStore: store, clock: new ManualClock(0), limits: [{ ...login('fixed-window'), limit: 2 }] });
    const a = await limiter.check({ principal: 'p' });
    const b = await limiter.check({ principal: 'p' });
    await a.settle('success');
    await a.settle('success');
    await a.settle('success');
    // b is still counted: one unit left, not two (a refund never goes below fresh, nor double-counts).
    const c = await limiter.check({ principal: 'p' });
    expect(c.allowed).toBe(true);
    expect((await limiter.check({ principal: 'p' })).allowed).toBe(false);
    await b.settle('failure');
    await b.settle('success');
    expect((await limiter.check({ principal: 'p' })).allowed).toBe(false);
  });

  it('a refund for a key whose state has since expired does nothing, and never leaves more than a fresh key', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ clock, limits: [{ ...login('fixed-window'), limit: 2, window: '1s' }] });
    const old = await limiter.check({ principal: 'p' });
    clock.advance(1500); // the window rolled over: the old state is gone
    const fresh1 = await limiter.check({ principal: 'p' });
    await old.settle('success');
    const fresh2 = await limiter.check({ principal: 'p' });
    expect([fresh1.allowed, fresh2.allowed]).toEqual([true, true]);
    // Still exactly N = 2 in this window: the stale refund did not add room.
    expect((await limiter.check({ principal: 'p' })).allowed).toBe(false);
  });

  it('{ status } settles per limit by failureStatus (list or predicate; default >= 400)', async () => {
    const limiter = createLimiter({
      clock: new ManualClock(0),
      limits: [
        { ...login('fixed-window'), name: 'auth', limit: 1, failureStatus: [401, 403] },
        { ...login('fixed-window'), name: 'any', limit: 1, key: 'ip' },
      ],
    });
    const d = await limiter.check({ principal: 'p', ip: 'a' });
    await d.settle({ status: 500 }); // a failure for 'any' (>= 400), a success for 'auth'
    const next = await limiter.check({ principal: 'p', ip: 'b' });
    expect(next.allowed).toBe(true); // auth was refunded; 'any' is on another ip
    expect((await limiter.check({ principal: 'q', ip: 'a' })).limitName).toBe('any');
  });

  it('refuses invalid count and failureStatus', () => {
    expect(() => createLimiter({ limits: [{ ...login(), count: 'some' as 'all' }] })).toThrow(ConfigError);
    expect(() => createLimiter({ limits: [{ ...login(), failureStatus: [] }] })).toThrow(/failureStatus/);
    expect(() => createLimiter({ limits: [{ ...login(), count: 'all', failureStatus: [401] }] })).toThrow(/failureStatus/);
    expect(() => createLimiter({ limits: [{ ...login('concurrency'), window: '1m' }] })).toThrow(/count/);
  });
});
