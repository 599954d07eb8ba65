import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter, ManualClock, memoryStore, type AlgorithmName, type Decision, type LimitDefinition, type MemoryStore, type SyncStore } from '../../../packages/ratecontract/src/index.js';
import { FULL_BUDGETS } from '../../helpers/tier.js';

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra'];

function view(d: Decision): unknown {
  const r = d.results[0];
  return [d.allowed, d.status, d.outcome, d.limitName, d.retryAfterMs, d.delayMs, r?.allowed, r?.remaining, r?.resetMs, r?.retryAfterMs, r?.source, r?.limit, r?.windowMs];
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
          const fast = createLimiter({ clock, defaultStore: memoryStore(), limits: [def] });
          // A second limit that never applies forces the general chain path.
          const general = createLimiter({
            clock,
            defaultStore: memoryStore(),
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
      { numRuns: FULL_BUDGETS ? 400 : 150 },
    );
  });

  it('a decision looks the same whatever path made it: own keys, JSON, spread and structuredClone; not a thenable', async () => {
    const def: LimitDefinition = { name: 'l', purpose: 'shedding', algorithm: 'gcra', limit: 1, window: 1000, key: 'ip' };
    const clock = new ManualClock(1_700_000_000_000);
    const fast = createLimiter({ clock, defaultStore: memoryStore(), limits: [def] });
    // The same limit on a memory store without its single-op entry: the general path, with one limit.
    const general = createLimiter({ clock, defaultStore: generalOnly(memoryStore()), limits: [def] });
    for (const expected of [true, false]) {
      const a = await fast.check({ ip: 'x' });
      const b = await general.check({ ip: 'x' });
      expect(a.allowed).toBe(expected);
      expect(Object.keys(a)).toEqual(['allowed', 'status', 'outcome', 'limitName', 'retryAfterMs', 'delayMs', 'results']);
      expect(Object.keys(a)).toEqual(Object.keys(b));
      expect(JSON.stringify(a)).toEqual(JSON.stringify(b));
      expect({ ...a }).toEqual({ ...b });
      expect(structuredClone({ ...a })).toEqual(structuredClone({ ...b }));
      expect((JSON.parse(JSON.stringify(a)) as { results: unknown[] }).results).toHaveLength(1);
      expect((a as unknown as { then?: unknown }).then).toBeUndefined();
      const again = await Promise.resolve(a);
      expect(again).toBe(a);
    }
  });
});

/** A store that forwards to `inner` but offers no single-op entry (`decideOne`), so the limiter takes its general path. */
function generalOnly(inner: MemoryStore): SyncStore {
  return {
    kind: 'memory',
    evaluate: (ops, now) => inner.evaluate(ops, now),
    evaluateSync: (ops, now) => inner.evaluateSync(ops, now),
    refund: (ops, now) => inner.refund(ops, now),
    release: (op, now) => inner.release(op, now),
  };
}

describe('a shadow limit never enforces anything, a queue delay included', () => {
  it('a shadow leaky bucket in queue mode reports what it would do but never delays, alone or in a chain', async () => {
    const shadowQueue: LimitDefinition = { name: 'q', purpose: 'shedding', algorithm: 'leaky-bucket', mode: 'queue', limit: 1, window: 1000, burst: 3, shadow: true, key: 'ip' };
    // The same limit enforcing: the second request at once is queued for the leak interval.
    const enforcing = createLimiter({ clock: new ManualClock(1_700_000_000_000), limits: [{ ...shadowQueue, shadow: false }] });
    await enforcing.check({ ip: 'x' });
    expect((await enforcing.check({ ip: 'x' })).delayMs).toBeGreaterThan(0);
    const chains: LimitDefinition[][] = [
      [shadowQueue],
      [shadowQueue, { name: 'wide', purpose: 'shedding', algorithm: 'gcra', limit: 100, window: 1000, key: 'ip' }],
    ];
    for (const limits of chains) {
      const limiter = createLimiter({ clock: new ManualClock(1_700_000_000_000), limits });
      for (let i = 0; i < 3; i++) {
        const d = await limiter.check({ ip: 'x' });
        expect([d.allowed, d.delayMs]).toEqual([true, 0]);
      }
    }
  });
});
