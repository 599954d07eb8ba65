/**
 * `ratecontract suggest`'s measurement (packages/cli/src/cli/suggest.ts):
 * each key's peak, counted in 16 sub-windows, against the exact most it sent
 * in any window (never above it, below it by at most one sub-window's
 * count); at most `maxKeys` keys held per limit, whatever the number of
 * keys; percentiles by nearest rank.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { percentile, SUB_WINDOWS, UsageTracker } from '../../../packages/cli/src/cli/suggest.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const limit = (windowMs: number) => compileLimit({ name: 'l', purpose: 'shedding', algorithm: 'sliding-window', limit: 10, window: windowMs, key: 'ip' }, 'limits[0]', new Set());

describe('per-key peak usage', () => {
  it('never above the exact peak in any window, and below it by at most one sub-window\'s count', () => {
    fc.assert(
      fc.property(fc.constantFrom(16, 160, 1600, 60_000), fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 300 }), (W, gaps) => {
        const tracker = new UsageTracker([limit(W)]);
        const times: number[] = [];
        let t = 1_700_000_000_000;
        for (const g of gaps) {
          t += Math.floor((g * W) / 1000);
          times.push(t);
          tracker.observe('l', 'k', true, t);
        }
        // The exact peak: most requests in any [s, s + W) with s a request time.
        let exact = 0;
        let j = 0;
        for (let i = 0; i < times.length; i++) {
          while ((times[j] as number) <= (times[i] as number) - W) j++;
          exact = Math.max(exact, i - j + 1);
        }
        const g = W / SUB_WINDOWS;
        let maxSub = 0;
        const bySub = new Map<number, number>();
        for (const x of times) {
          const s = Math.floor(x / g);
          bySub.set(s, (bySub.get(s) ?? 0) + 1);
          maxSub = Math.max(maxSub, bySub.get(s) as number);
        }
        const [u] = tracker.usage(100);
        expect(u?.peak.max).toBeLessThanOrEqual(exact);
        expect(u?.peak.max).toBeGreaterThanOrEqual(exact - maxSub);
        expect(u?.peakShort.max).toBe(maxSub);
      }),
      fcBudget(),
    );
  });

  it('holds at most maxKeys keys per limit, however many keys; the estimate of keys stays near the truth', () => {
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 400 }), fc.integer({ min: 1, max: 5000 }), (maxKeys, keys) => {
        const tracker = new UsageTracker([limit(60_000)], maxKeys);
        for (let i = 0; i < keys; i++) {
          tracker.observe('l', `10.0.${i >> 8}.${i & 255}`, i % 3 !== 0, 1_700_000_000_000 + i);
          if (tracker.keysHeld > maxKeys) expect(tracker.keysHeld).toBeLessThanOrEqual(maxKeys);
        }
        const [u] = tracker.usage(99);
        if (keys <= maxKeys) {
          expect(u?.keys).toBe(keys);
          expect(u?.sampleRate).toBe(1);
        } else {
          expect(u?.sampledKeys).toBeLessThanOrEqual(maxKeys);
          expect(u?.sampleRate).toBeLessThan(1);
        }
      }),
      fcBudget({ runs: 100 }),
    );
  });

  it('percentiles by nearest rank', () => {
    const xs = Array.from({ length: 1000 }, (_, i) => i + 1);
    expect([percentile(xs, 50), percentile(xs, 90), percentile(xs, 99), percentile(xs, 99.9), percentile(xs, 100)]).toEqual([500, 900, 990, 999, 1000]);
    expect(percentile([], 99)).toBe(0);
    expect(percentile([7], 50)).toBe(7);
  });
});
