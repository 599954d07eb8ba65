/**
 * The log throttle's bound: per key, at most one line in any `intervalMs`
 * after the last written one, and no event lost from the count: the lines
 * written plus the `suppressed` they carry (and what is still pending) add up
 * to every event of that key.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LogThrottle } from '../../../packages/cli/src/host/log-throttle.js';

describe('LogThrottle', () => {
  it('writes the first line of a key at once, then counts the rest until the interval passed', () => {
    let now = 1_000;
    const t = new LogThrottle(5_000, () => now);
    const lines: Array<[string, number]> = [];
    const take = (key: string): void => t.take(key, (n) => lines.push([key, n]));
    take('a');
    take('a');
    take('b');
    now += 4_999;
    take('a');
    now += 1;
    take('a');
    expect(lines).toEqual([
      ['a', 0],
      ['b', 0],
      ['a', 2],
    ]);
  });

  it('per key: one line per interval at most, and every event counted once', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100 }),
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 0, max: 40 })), { maxLength: 300 }),
        (interval, events) => {
          let now = 0;
          const t = new LogThrottle(interval, () => now);
          const written = new Map<string, number[]>();
          const carried = new Map<string, number>();
          const seen = new Map<string, number>();
          for (const [key, step] of events) {
            now += step;
            seen.set(key, (seen.get(key) ?? 0) + 1);
            t.take(key, (suppressed) => {
              written.set(key, [...(written.get(key) ?? []), now]);
              carried.set(key, (carried.get(key) ?? 0) + suppressed);
            });
          }
          now += interval;
          for (const [key, total] of seen) {
            const at = written.get(key) ?? [];
            expect(at.length).toBeGreaterThan(0);
            for (let i = 1; i < at.length; i++) expect((at[i] as number) - (at[i - 1] as number)).toBeGreaterThanOrEqual(interval);
            // Pending: events after the last line, carried by the next one, which comes once the interval passed.
            let pending = -1;
            t.take(key, (s) => (pending = s));
            expect(pending, 'the probe wrote at once').toBeGreaterThanOrEqual(0);
            expect(at.length + (carried.get(key) ?? 0) + pending).toBe(total);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
