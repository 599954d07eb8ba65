/**
 * `limiter.checkSync`: on an in-process store it makes exactly the decisions
 * `check` makes (property, one limit and chains with concurrency); on an
 * asynchronous store it returns `undefined` and decides nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter, ManualClock, memoryStore, UsageError, type AlgorithmName, type Decision, type LimitDefinition, type Store } from '../../src/index.js';
import { fcBudget } from '../helpers/fc-budget.js';

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'];

function view(d: Decision): unknown {
  return {
    allowed: d.allowed,
    status: d.status,
    outcome: d.outcome,
    limit: d.limit,
    retryAfterMs: d.retryAfterMs,
    delayMs: d.delayMs,
    results: d.results.map((r) => [r.name, r.allowed, r.remaining, r.resetMs, r.retryAfterMs, r.source]),
  };
}

function def(name: string, algorithm: AlgorithmName, key: LimitDefinition['key']): LimitDefinition {
  return {
    name,
    purpose: 'shedding',
    algorithm,
    limit: 3,
    window: 1000,
    key,
    ...(['token-bucket', 'leaky-bucket', 'gcra'].includes(algorithm) ? { burst: 4 } : {}),
  };
}

describe('checkSync', () => {
  it('decides exactly as check on the memory store, one limit or a chain (property)', async () => {
    let compared = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...ALGORITHMS), { minLength: 1, maxLength: 3 }),
        fc.array(fc.record({ step: fc.integer({ min: 0, max: 700 }), ip: fc.constantFrom('a', 'b'), cost: fc.integer({ min: 1, max: 4 }) }), { maxLength: 40 }),
        async (algorithms, steps) => {
          const limits = algorithms.map((a, i) => def(`l${i}`, a, i === 0 ? 'ip' : 'global'));
          const clockA = new ManualClock(1_700_000_000_000);
          const clockB = new ManualClock(1_700_000_000_000);
          const sync = createLimiter({ clock: clockA, store: memoryStore(), limits });
          const async = createLimiter({ clock: clockB, store: memoryStore(), limits });
          for (const s of steps) {
            clockA.advance(s.step);
            clockB.advance(s.step);
            const a = sync.checkSync({ ip: s.ip }, { cost: s.cost });
            expect(a).toBeDefined();
            const b = await async.check({ ip: s.ip }, { cost: s.cost });
            expect(view(a as Decision)).toEqual(view(b));
            compared++;
          }
        },
      ),
      fcBudget({ ms: 2000 }),
    );
    expect(compared).toBeGreaterThan(100);
  });

  it('returns undefined and consumes nothing when the store is asynchronous', async () => {
    const inner = memoryStore();
    // The same store behind an asynchronous face only (no evaluateSync).
    const asyncOnly: Store = {
      kind: 'async-memory',
      evaluate: (ops, now) => inner.evaluate(ops, now),
      refund: (ops, now) => inner.refund(ops, now),
      release: (op, now) => inner.release(op, now),
    };
    const limiter = createLimiter({ store: asyncOnly, limits: [{ name: 'n1', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1h', key: 'ip' }] });
    expect(limiter.checkSync({ ip: 'x' })).toBeUndefined();
    expect(limiter.checkSync({ ip: 'x' })).toBeUndefined();
    expect((await limiter.check({ ip: 'x' })).allowed).toBe(true);
    expect((await limiter.check({ ip: 'x' })).allowed).toBe(false);
  });

  it('throws UsageError on an invalid cost, as check rejects', async () => {
    const limiter = createLimiter({ limits: [def('l', 'gcra', 'ip'), def('g', 'fixed-window', 'global')] });
    expect(() => limiter.checkSync({ ip: 'x' }, { cost: 0 })).toThrow(UsageError);
    await expect(limiter.check({ ip: 'x' }, { cost: 0 })).rejects.toThrow(UsageError);
  });
});
