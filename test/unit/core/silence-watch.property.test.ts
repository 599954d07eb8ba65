/**
 * The dead-connection detector's bound, as properties over random call
 * histories (calls made, settled in any order or never, looked at any time),
 * against a model that knows the exact instant of every settlement:
 *
 * - never early: a silence is reported at t only if a call made at or
 *   before t - afterMs is still outstanding and no call settled in the last
 *   afterMs (so a store whose replies, late or not, keep coming at least
 *   once per afterMs is never taken for dead); reports are at least afterMs
 *   apart;
 * - never missed: a call outstanding since t0 with no settlement since is
 *   reported at the first look at or after max(t0, the last report) + afterMs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SilenceWatch } from '../../../packages/ratecontract/src/core/silence-watch.js';
import { fcBudget } from '../../helpers/fc-budget.js';

type Step = { readonly dt: number; readonly op: 'issue' | 'settle' | 'check'; readonly pick: number };

const stepArb: fc.Arbitrary<Step> = fc.record({
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 3000 })),
  op: fc.constantFrom<Step['op']>('issue', 'issue', 'settle', 'check', 'check'),
  pick: fc.nat(),
});

/** Lets the watch's settle handlers (promise reactions) run. */
const flush = async (): Promise<void> => {
  for (let i = 0; i < 3; i++) await Promise.resolve();
};

describe('SilenceWatch', () => {
  it('reports silence never earlier than afterMs after the last settlement, and never misses one', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2500 }), fc.array(stepArb, { minLength: 1, maxLength: 80 }), async (afterMs, steps) => {
        const watch = new SilenceWatch(afterMs);
        let now = 0;
        const open: Array<{ at: number; settle: () => void; quiet: boolean }> = [];
        let lastSettle = -Infinity;
        let lastReport = -Infinity;
        for (const step of steps) {
          now += step.dt;
          if (step.op === 'issue') {
            let settle!: () => void;
            const call = new Promise<void>((resolve, reject) => (settle = step.pick % 2 === 0 ? resolve : () => reject(new Error('ERR'))));
            call.catch(() => undefined);
            watch.issued(now, call);
            open.push({ at: now, settle, quiet: true });
          } else if (step.op === 'settle' && open.length > 0) {
            const c = open.splice(step.pick % open.length, 1)[0] as { settle: () => void };
            c.settle();
            await flush();
            lastSettle = now;
            // Calls made before this settlement are not part of a silence that starts after it.
            for (const o of open) o.quiet = false;
          } else if (step.op === 'check') {
            const reported = watch.check(now);
            const oldest = Math.min(...open.map((c) => c.at));
            if (reported !== undefined) {
              // Never early.
              expect(open.length).toBeGreaterThan(0);
              expect(oldest).toBeLessThanOrEqual(now - afterMs);
              expect(lastSettle).toBeLessThanOrEqual(now - afterMs);
              expect(now - lastReport).toBeGreaterThanOrEqual(afterMs);
              expect(reported).toBeGreaterThanOrEqual(afterMs);
              lastReport = now;
            } else if (open.length > 0) {
              // Never missed: an outstanding call with no settlement since it was made.
              const quiet = open.filter((c) => c.quiet);
              const since = Math.max(Math.min(...quiet.map((c) => c.at)), lastReport);
              if (quiet.length > 0) expect(now - since).toBeLessThan(afterMs);
            }
            expect(watch.outstanding).toBe(open.length);
          }
        }
      }),
      fcBudget({ runs: 300, ms: 4000 }),
    );
  });

  it('a slow store whose replies arrive late but keep arriving is never silent', async () => {
    const watch = new SilenceWatch(2000);
    // 50 calls in flight, each answered 70 ms late (past any deadline), one answered every 20 ms.
    let now = 0;
    const pending: Array<() => void> = [];
    for (let i = 0; i < 50; i++) {
      watch.issued(now, new Promise<void>((resolve) => pending.push(resolve)));
    }
    for (let t = 0; t < 20_000; t += 20) {
      now = t;
      pending.shift()?.();
      await flush();
      watch.issued(now, new Promise<void>((resolve) => pending.push(resolve)));
      expect(watch.check(now)).toBeUndefined();
    }
    // Then the replies stop: reported once afterMs has passed, then once per afterMs.
    const stopped = now;
    const reports: number[] = [];
    for (let t = stopped; t < stopped + 7000; t += 100) if (watch.check(t) !== undefined) reports.push(t - stopped);
    expect(reports).toEqual([2000, 4000, 6000]);
  });
});
