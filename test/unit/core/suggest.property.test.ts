import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { closest, didYouMean } from '../../../packages/ratecontract/src/core/suggest.js';
import { fcBudget } from '../../helpers/fc-budget.js';

/** Optimal string alignment distance, written plainly, as the reference. */
function reference(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  const at = (i: number, j: number): number => (d[i] as number[])[j] as number;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      let v = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, at(i - 2, j - 2) + 1);
      (d[i] as number[])[j] = v;
    }
  }
  return at(a.length, b.length);
}

const word = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'A', 'x'), maxLength: 9 });

describe('closest (the did-you-mean helper)', () => {
  it('returns a candidate within the allowed distance, and one exists only if it returns one', () => {
    fc.assert(
      fc.property(word, fc.array(word, { maxLength: 6 }), (w, candidates) => {
        const allowed = w.length <= 2 ? 0 : w.length <= 4 ? 1 : 2;
        const hit = closest(w, candidates);
        const within = candidates.filter((c) => reference(w.toLowerCase(), c.toLowerCase()) <= allowed);
        if (hit === undefined) expect(within).toEqual([]);
        else {
          expect(candidates).toContain(hit);
          expect(reference(w.toLowerCase(), hit.toLowerCase())).toBeLessThanOrEqual(allowed);
          // No candidate is strictly closer than the one it names.
          const best = Math.min(...candidates.map((c) => reference(w.toLowerCase(), c.toLowerCase())));
          expect(reference(w.toLowerCase(), hit.toLowerCase())).toBe(best);
        }
      }),
      fcBudget({ runs: 300, ms: 2000 }),
    );
  });

  it('a hostile word (10 MB) costs no more than its length: no table of its size per candidate', () => {
    const huge = 'x'.repeat(10_000_000);
    const t = performance.now();
    expect(didYouMean(huge, ['open', 'closed', 'degraded'])).toBe('');
    // Bound: 2 s, generous for a shared machine; the full table took about 70 s here.
    expect(performance.now() - t).toBeLessThan(2000);
  });
});
