import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter, ManualClock, memoryStore, type AlgorithmName, type Decision, type LimitDefinition } from '../../src/index.js';

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra'];

function view(d: Decision): unknown {
  const r = d.results[0];
  return [d.allowed, d.status, d.outcome, d.limit, d.retryAfterMs, d.delayMs, r?.allowed, r?.remaining, r?.resetMs, r?.retryAfterMs, r?.source, r?.limit, r?.windowMs];
}

describe('the single-limit fast path decides exactly as the general chain path', () => {
  it('for every algorithm, shadow or not, on random traffic', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ALGORITHMS),
        fc.boolean(),
        fc.boolean(),
        fc.array(fc.record({ step: fc.integer({ min: 0, max: 700 }), key: fc.constantFrom('a', 'b'), cost: fc.integer({ min: 1, max: 4 }) }), { maxLength: 40 }),
        async (algorithm, shadow, queue, steps) => {
          const def: LimitDefinition = {
            name: 'l', purpose: 'shedding', algorithm, limit: 3, window: 1000, key: 'ip', shadow,
            ...(algorithm === 'leaky-bucket' && queue ? { mode: 'queue' as const } : {}),
            ...(['token-bucket', 'leaky-bucket', 'gcra'].includes(algorithm) ? { burst: 4 } : {}),
          };
          const clock = new ManualClock(1_700_000_000_000);
          const fast = createLimiter({ clock, store: memoryStore(), limits: [def] });
          // A second limit that never applies forces the general chain path.
          const general = createLimiter({
            clock,
            store: memoryStore(),
            limits: [def, { name: 'never', purpose: 'shedding', algorithm: 'fixed-window', limit: 1, window: 1000, key: () => undefined }],
          });
          for (const s of steps) {
            clock.advance(s.step);
            const a = await fast.check({ ip: s.key }, { cost: s.cost });
            const b = await general.check({ ip: s.key }, { cost: s.cost });
            expect(view(a)).toEqual(view(b));
          }
        },
      ),
      { numRuns: process.env.CI === 'true' ? 400 : 150 },
    );
  });

  it('resolves with a decision of the same shape as the general path, not a thenable', async () => {
    const def: LimitDefinition = { name: 'l', purpose: 'shedding', algorithm: 'gcra', limit: 1, window: 1000, key: 'ip' };
    const clock = new ManualClock(1_700_000_000_000);
    const fast = createLimiter({ clock, store: memoryStore(), limits: [def] });
    const general = createLimiter({
      clock,
      store: memoryStore(),
      limits: [def, { name: 'never', purpose: 'shedding', algorithm: 'fixed-window', limit: 1, window: 1000, key: () => undefined }],
    });
    for (const expected of [true, false]) {
      const a = await fast.check({ ip: 'x' });
      const b = await general.check({ ip: 'x' });
      expect(a.allowed).toBe(expected);
      // The same own keys in the same order (`results` is a getter on the fast path's prototype).
      expect(Object.keys(a)).toEqual(['allowed', 'status', 'outcome', 'limit', 'retryAfterMs', 'delayMs']);
      expect(Object.keys(a)).toEqual(Object.keys(b).filter((k) => k !== 'results'));
      expect(Object.keys(a.results[0] ?? {})).toEqual(Object.keys(b.results[0] ?? {}));
      expect((a as unknown as { then?: unknown }).then).toBeUndefined();
      const again = await Promise.resolve(a);
      expect(again).toBe(a);
    }
  });
});
