import { describe, expect, it } from 'vitest';
import { AdaptiveThrottle, RetryBudget } from '../../../packages/ratecontract/src/client/budget.js';

describe('RetryBudget', () => {
  it('allows minRetries plus ratio x first attempts within the window, and forgets them after it', () => {
    const b = new RetryBudget({ ratio: 0.1, minRetries: 2, windowMs: 10_000 });
    for (let i = 0; i < 20; i++) b.request(0);
    // 2 + 0.1 * 20 = 4 retries.
    expect([b.tryRetry(0), b.tryRetry(1), b.tryRetry(2), b.tryRetry(3), b.tryRetry(4)]).toEqual([true, true, true, true, false]);
    // A refused retry takes nothing: still refused, not counted.
    expect(b.tryRetry(5)).toBe(false);
    // Once the window has moved past them, the retries (and the first attempts) are forgotten: the floor is back.
    expect([b.tryRetry(10_001), b.tryRetry(10_002), b.tryRetry(10_003)]).toEqual([true, true, false]);
  });
});

describe('AdaptiveThrottle', () => {
  it('refuses with probability max(0, (requests - k * accepts) / (requests + 1))', () => {
    const t = new AdaptiveThrottle({ k: 2, windowMs: 120_000 });
    expect(t.probability(0)).toBe(0);
    for (let i = 0; i < 10; i++) t.admit(0, () => 0.99);
    t.accept(0);
    t.accept(0);
    expect(t.probability(0)).toBeCloseTo((10 - 2 * 2) / 11, 12);
    for (let i = 0; i < 3; i++) t.accept(0);
    expect(t.probability(0)).toBe(0);
    // admit() refuses when random() < p, and counts the refused attempt as a request.
    const u = new AdaptiveThrottle({ k: 2, windowMs: 120_000 });
    for (let i = 0; i < 9; i++) u.admit(0, () => 0.99);
    const p = u.probability(0); // 9 / 10
    expect(u.admit(0, () => p - 1e-9)).toBe(false);
    expect(u.admit(0, () => 0.99)).toBe(true);
    expect(u.probability(0)).toBeCloseTo(11 / 12, 12);
    // Counts leave after the window.
    expect(u.probability(120_001)).toBe(0);
  });
});
