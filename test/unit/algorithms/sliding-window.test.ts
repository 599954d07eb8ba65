import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { measure, type Scenario } from '../../../scripts/measure-sliding-window-error.js';
import { slidingWindowEstimate } from '../../../packages/ratecontract/src/algorithms/sliding-window.js';
import { fixedWindow, slidingLog, slidingWindow, type SlidingWindowState } from '../../../packages/ratecontract/src/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const MINUTE = 60_000;
const p50 = { limit: 50, windowMs: MINUTE, burst: 50, queue: false };

describe('sliding-window: the published worked example', () => {
  const w = 1_700_000_040_000; // a window start (a multiple of 60 000)
  const now = w + 15_000; // 15 s into the current window

  it('prev 42, curr 18, 15 s into a 60 s window: the estimate is 49.5', () => {
    expect(w % MINUTE).toBe(0);
    expect(slidingWindowEstimate(42, 18, 15_000, MINUTE)).toBe(49.5);
    // 42 * 45/60 + 18
    expect(slidingWindowEstimate(42, 18, 15_000, MINUTE)).toBe((42 * 45) / 60 + 18);
  });

  it('comparison rule: admitted iff estimate + cost <= N; 18 counted before it -> 49.5 + 1 > 50, rejected', () => {
    const s: SlidingWindowState = { w, c: 18, p: 42 };
    const r = slidingWindow.decide(s, now, 1, p50);
    expect(r.allowed).toBe(false);
    expect(r.remaining).toBe(0);
    // Earliest admission: 42*(60000-e)/60000 + 19 <= 50 -> e >= 60000 - floor(31*60000/42) = 15715.
    expect(r.retryAfterMs).toBe(715);
    expect(slidingWindowEstimate(42, 18 + 1, 15_715, MINUTE)).toBeLessThanOrEqual(50);
    expect(slidingWindowEstimate(42, 18 + 1, 15_714, MINUTE)).toBeGreaterThan(50);
    // The rejected request changed nothing.
    expect(r.state).toEqual(s);
  });

  it('17 counted before it: 42*0.75 + 17 + 1 = 49.5 <= 50, admitted, and the next one is not', () => {
    const r = slidingWindow.decide({ w, c: 17, p: 42 }, now, 1, p50);
    expect(r.allowed).toBe(true);
    expect(r.state).toEqual({ w, c: 18, p: 42 });
    // floor(50 - 49.5) = 0 whole requests still fit.
    expect(r.remaining).toBe(0);
    expect(slidingWindow.decide(r.state, now, 1, p50).allowed).toBe(false);
  });

  it('estimate + cost exactly N is admitted (<=, not <): prev 40, curr 19, 15 s in -> 30 + 19 + 1 = 50', () => {
    const r = slidingWindow.decide({ w, c: 19, p: 40 }, now, 1, p50);
    expect(slidingWindowEstimate(40, 19, 15_000, MINUTE) + 1).toBe(50);
    expect([r.allowed, r.remaining]).toEqual([true, 0]);
    // With cost 2 the same state is 1 over.
    expect(slidingWindow.decide({ w, c: 19, p: 40 }, now, 2, p50).allowed).toBe(false);
  });

  it('the state rolls: the current count becomes the previous one at the boundary, and two windows later both are gone', () => {
    const s: SlidingWindowState = { w, c: 18, p: 42 };
    const next = slidingWindow.decide(s, w + MINUTE, 0, p50);
    expect(next.state).toEqual({ w: w + MINUTE, c: 0, p: 18 });
    expect(next.remaining).toBe(50 - 18);
    const gone = slidingWindow.decide(s, w + 2 * MINUTE, 0, p50);
    expect(gone.state).toBeUndefined();
    expect(gone.remaining).toBe(50);
  });

  it('the integer rule agrees with the floating estimate wherever the estimate is not within rounding of the limit', () => {
    const arb = fc.record({
      limit: fc.integer({ min: 1, max: 100 }),
      windowMs: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constantFrom(1000, MINUTE, 3_600_000)),
      prevShare: fc.double({ min: 0, max: 1, noNaN: true }),
      currShare: fc.double({ min: 0, max: 1, noNaN: true }),
      elapsedShare: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
      cost: fc.integer({ min: 0, max: 5 }),
    });
    let compared = 0;
    fc.assert(
      fc.property(arb, ({ limit, windowMs, prevShare, currShare, elapsedShare, cost }) => {
        const p = { limit, windowMs, burst: limit, queue: false };
        const prev = Math.round(prevShare * limit);
        const curr = Math.round(currShare * limit);
        const elapsed = Math.floor(elapsedShare * windowMs);
        const w = 1_700_000_000_000 - (1_700_000_000_000 % windowMs);
        const r = slidingWindow.decide({ w, c: curr, p: prev }, w + elapsed, cost, p);
        const est = slidingWindowEstimate(prev, curr, elapsed, windowMs);
        if (Math.abs(est + cost - limit) > 1e-9) {
          expect(r.allowed).toBe(est + cost <= limit);
          compared++;
        }
        if (r.allowed) expect(r.remaining).toBe(Math.floor(limit - est - cost + 1e-9));
      }),
      fcBudget(),
    );
    expect(compared).toBeGreaterThan(50);
  });
});

describe('sliding-window: measured error against an exact sliding log', () => {
  // Deterministic (seeded) traffic; see scripts/measure-sliding-window-error.ts and docs/algorithms.md.
  const poisson: readonly Scenario[] = [
    { limit: 20, windowMs: 1000, load: 1.0, shape: 'poisson' },
    { limit: 100, windowMs: MINUTE, load: 1.2, shape: 'poisson' },
  ];
  const opts = { windows: 60, seeds: 2 };

  it('on near-limit Poisson traffic it admits within 2.5% of the exact rate and never 2N in any W', () => {
    for (const s of poisson) {
      const m = measure(s, opts);
      expect(m.requests).toBeGreaterThan(1000);
      expect(m.rateError, `${s.limit}/${s.windowMs}`).toBeLessThan(0.025);
      expect(m.peak * s.limit).toBeLessThanOrEqual(2 * s.limit - 1);
    }
  });

  it('the same yardstick fails a fixed window (so the bound above can fail) and gives an exact log zero error', () => {
    const fixed = poisson.map((s) => measure(s, { ...opts, algorithm: fixedWindow }));
    expect(Math.max(...fixed.map((m) => m.rateError))).toBeGreaterThan(0.025);
    for (const s of poisson) {
      const exact = measure(s, { ...opts, algorithm: slidingLog });
      expect([exact.disagreement, exact.falseAdmit, exact.falseReject, exact.rateError, exact.peak]).toEqual([0, 0, 0, 0, 1]);
    }
  });
});
