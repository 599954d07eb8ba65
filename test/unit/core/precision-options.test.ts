/**
 * The sliding window's `precision` option: refused where it does not apply
 * or cannot tile the window (with the option's path), a state identity of
 * its own per precision, and through a limiter on the memory store the
 * same decisions as the algorithm alone.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, createLimiter, ManualClock, slidingWindow, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';

const base: LimitDefinition = { name: 'api', purpose: 'shedding', algorithm: 'sliding-window', limit: 10, window: '1m', key: 'header.x-key' };

function refusal(def: object): string {
  try {
    compileLimit(def as LimitDefinition, 'limits[0]', new Set());
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('accepted');
}

describe('precision: what is refused, with the path', () => {
  it.each([
    [{ ...base, algorithm: 'gcra', precision: 4 }, 'limits[0].precision: applies to sliding-window only, not gcra'],
    [{ ...base, precision: 0 }, 'limits[0].precision: must be an integer from 1 to 60 (sub-windows per window), got 0'],
    [{ ...base, precision: 61 }, 'limits[0].precision: must be an integer from 1 to 60'],
    [{ ...base, precision: 2.5 }, 'limits[0].precision: must be an integer from 1 to 60'],
    [{ ...base, precision: '4' }, 'got string'],
    [{ ...base, window: 1000, precision: 3 }, 'limits[0].window: 1000 ms is not a multiple of precision 3'],
    [{ ...base, precision: 4, plan: 'header.x-plan', plans: { slow: { window: 1001 } } }, 'limits[0].plans.slow.window: 1001 ms is not a multiple of precision 4'],
    [{ ...base, precision: 4, tier: { mode: 'pre-filter' } }, 'limits[0].tier: cannot be combined with `precision` above 1 yet'],
    [{ ...base, precison: 4 }, 'limits[0].precison: unknown option "precison"; did you mean "precision"?'],
  ])('%j', (def, message) => {
    expect(refusal(def)).toContain(message);
  });

  it('precision 1 (or none) is today\'s limit: same id, no precision in the params; k >= 2 has an id of its own', () => {
    const none = compileLimit(base, 'limits[0]', new Set());
    const one = compileLimit({ ...base, precision: 1 }, 'limits[0]', new Set());
    const four = compileLimit({ ...base, precision: 4 }, 'limits[0]', new Set());
    expect(none.id).toBe('api:sliding-window');
    expect(one.id).toBe(none.id);
    expect(one.params).toEqual(none.params);
    expect('precision' in none.params).toBe(false);
    expect(four.id).toBe('api:sliding-window/4');
    expect(four.params.precision).toBe(4);
  });
});

describe('precision through a limiter on the memory store', () => {
  it('decides as the algorithm alone, request by request', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const limiter = createLimiter({ clock, limits: [{ ...base, limit: 5, window: 1000, precision: 4 }] });
    const p = { limit: 5, windowMs: 1000, burst: 5, queue: false, precision: 4 };
    let state: unknown;
    let rejected = 0;
    for (let i = 0; i < 400; i++) {
      clock.advance((i * 37) % 97);
      const d = await limiter.check({ headers: { 'x-key': 'k' } });
      const r = slidingWindow.decide(state as never, clock.now(), 1, p);
      expect([d.allowed, d.retryAfterMs]).toEqual([r.allowed, r.retryAfterMs]);
      if (r.allowed) state = r.state;
      else rejected++;
    }
    expect(rejected).toBeGreaterThan(10);
  });
});
