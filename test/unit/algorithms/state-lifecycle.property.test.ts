import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixedWindow, type Algorithm, type AlgorithmParams, type AlgorithmResult } from '../../../packages/ratecontract/src/index.js';
import { expectEqual } from '../../helpers/cheap-expect.js';
import { ALGORITHM_CASES, drive, fcBudget, paramsArb, quotaParamsArb, trafficArb } from '../../helpers/fc-budget.js';

const cases = ALGORITHM_CASES;

/** What a client can observe of a decision. */
function seen(r: AlgorithmResult<unknown>): readonly [boolean, number, number, number, number] {
  return [r.allowed, r.remaining, r.resetMs, r.retryAfterMs, r.delayMs];
}

/**
 * The decisions of every cost from 0 to capacity + 1 on `state` at `now`
 * (at quota magnitudes, where the capacity reaches 10^12: the 64 smallest and
 * largest costs, and every power of two and its neighbours between).
 */
function answers(algo: Algorithm<unknown>, state: unknown, now: number, p: AlgorithmParams): ReadonlyArray<ReturnType<typeof seen>> {
  const out: Array<ReturnType<typeof seen>> = [];
  const cap = algo.capacity(p);
  const costs = new Set<number>();
  if (cap <= 256) for (let cost = 0; cost <= cap + 1; cost++) costs.add(cost);
  else {
    for (let k = 0; k < 64; k++) costs.add(k).add(cap + 1 - k);
    for (let b = 1; b <= cap; b *= 2) costs.add(b - 1).add(b).add(b + 1);
  }
  for (const cost of [...costs].sort((a, b) => a - b)) out.push(seen(algo.decide(state, now, cost, p, 'probe')));
  return out;
}

const SCALES = [
  ['', (o: { burst: boolean; queue: boolean; log: boolean }) => paramsArb(o)],
  [' (quota magnitudes)', (o: { burst: boolean; queue: boolean; log: boolean }) => quotaParamsArb(o)],
] as const;

describe.each(cases)('%s: state lifecycle', (_label, algo, queue) => {
  for (const [suffix, arb] of SCALES) {
  const params = () => arb({ burst: algo.usesBurst, queue, log: algo.name === 'sliding-log' });
  it(`resetMs is the state life: now + resetMs = expiresAt(state), and 0 when there is no state${suffix}`, () => {
    fc.assert(
      fc.property(trafficArb(algo, params()), (traffic) => {
        for (const d of drive(algo, traffic)) {
          const r = d.result;
          if (r.state === undefined) expect(r.resetMs).toBe(0);
          else expect(d.now + r.resetMs).toBe(algo.expiresAt(r.state, traffic.p));
        }
      }),
      fcBudget(),
    );
  });

  it(`expiresAt is neither early (the store may reclaim the state then) nor late${suffix}`, () => {
    fc.assert(
      fc.property(trafficArb(algo, params(), 30), (traffic) => {
        const { p } = traffic;
        for (const d of drive(algo, traffic)) {
          const s = d.result.state;
          if (s === undefined) continue;
          const e = algo.expiresAt(s, p);
          expect(e).toBeGreaterThan(d.now);
          // At expiresAt the state answers every request exactly like no state at all...
          expectEqual(answers(algo, s, e, p), answers(algo, undefined, e, p));
          // ... and 1 ms earlier it still shows.
          expect(seen(algo.decide(s, e - 1, 0, p))).not.toEqual(seen(algo.decide(undefined, e - 1, 0, p)));
        }
      }),
      fcBudget(),
    );
  });

  it(`refund(state, now, cost) undoes an admission of cost at now exactly${suffix}`, () => {
    fc.assert(
      fc.property(trafficArb(algo, params(), 30), (traffic) => {
        const { p } = traffic;
        for (const d of drive(algo, traffic)) {
          if (!d.result.allowed || d.cost === 0 || d.result.state === undefined) continue;
          const back = algo.refund(d.result.state, d.now, d.cost, p, d.leaseId);
          expectEqual(answers(algo, back, d.now, p), answers(algo, d.before, d.now, p));
        }
      }),
      fcBudget(),
    );
  });
  }
});

describe('fixed-window: a request that can never fit, on an empty window', () => {
  it('reports resetMs 0, as a peek on the same empty window does (nothing is held)', () => {
    const p = { limit: 3, windowMs: 60_000, burst: 3, queue: false };
    const t = 1_700_000_012_345;
    const peek = fixedWindow.decide(undefined, t, 0, p);
    const never = fixedWindow.decide(undefined, t, 4, p);
    expect([peek.state, peek.resetMs]).toEqual([undefined, 0]);
    expect([never.allowed, never.retryAfterMs, never.state]).toEqual([false, Infinity, undefined]);
    expect(never.resetMs).toBe(peek.resetMs);
  });
});
