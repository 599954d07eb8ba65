import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SpaceSaving } from '../../../packages/cli/src/cli/top-keys.js';

/** The space-saving bound replay's top keys rest on, checked against exact counts. */
describe('SpaceSaving', () => {
  it('is exact while the keys fit', () => {
    const s = new SpaceSaving(3);
    for (const k of ['a', 'b', 'a', 'c', 'a', 'b']) s.add(k);
    expect(s.top(10)).toEqual([
      { key: 'a', count: 3, error: 0 },
      { key: 'b', count: 2, error: 0 },
      { key: 'c', count: 1, error: 0 },
    ]);
    expect(s.total).toBe(6);
  });

  it('keeps its bound on any stream: count - error <= true <= count, error <= total/capacity, and every key above total/capacity listed', () => {
    let replaced = 0;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.integer({ min: 0, max: 30 }), { maxLength: 400 }), (capacity, stream) => {
        const s = new SpaceSaving(capacity);
        const exact = new Map<string, number>();
        for (const k of stream) {
          const key = `k${k}`;
          s.add(key);
          exact.set(key, (exact.get(key) ?? 0) + 1);
        }
        const listed = s.top(capacity);
        expect(listed.length).toBe(Math.min(capacity, exact.size));
        for (const c of listed) {
          const truth = exact.get(c.key) ?? 0;
          expect(c.count - c.error).toBeLessThanOrEqual(truth);
          expect(truth).toBeLessThanOrEqual(c.count);
          expect(c.error).toBeLessThanOrEqual(stream.length / capacity);
          if (c.error > 0) replaced++;
        }
        const keys = new Set(listed.map((c) => c.key));
        for (const [k, n] of exact) if (n > stream.length / capacity) expect(keys.has(k), k).toBe(true);
        // Largest first.
        for (let i = 1; i < listed.length; i++) expect((listed[i - 1] as { count: number }).count).toBeGreaterThanOrEqual((listed[i] as { count: number }).count);
      }),
      { numRuns: 300 },
    );
    expect(replaced, 'some runs replaced counters').toBeGreaterThan(0);
  });

  it('finds a heavy hitter among a million distinct keys with 100 counters', () => {
    const s = new SpaceSaving(100);
    for (let i = 0; i < 1_000_000; i++) {
      s.add(`spread-${i}`);
      if (i % 10 === 0) s.add('attacker');
    }
    const top = s.top(1)[0];
    expect(top?.key).toBe('attacker');
    expect((top?.count ?? 0) - (top?.error ?? 0)).toBeLessThanOrEqual(100_000);
    expect(top?.count).toBeGreaterThanOrEqual(100_000);
  });
});
