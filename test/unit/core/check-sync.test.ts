/**
 * `limiter.checkSync` on an asynchronous store returns `undefined` and
 * decides nothing; an invalid cost throws as `check` rejects. That it decides
 * exactly as `check` on every path is test/core/entry-points.property.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createLimiter, memoryStore, UsageError, type AlgorithmName, type LimitDefinition, type Store } from '../../../packages/ratecontract/src/index.js';

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
  it('returns undefined and consumes nothing when the store is asynchronous', async () => {
    const inner = memoryStore();
    // The same store behind an asynchronous face only (no evaluateSync).
    const asyncOnly: Store = {
      kind: 'async-memory',
      evaluate: (ops, now) => inner.evaluate(ops, now),
      refund: (ops, now) => inner.refund(ops, now),
      release: (op, now) => inner.release(op, now),
    };
    const limiter = createLimiter({ defaultStore: asyncOnly, limits: [{ name: 'n1', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1h', key: 'ip' }] });
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
