import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gcra, leakyBucket, tokenBucket, type Algorithm, type AlgorithmParams } from '../../../packages/ratecontract/src/index.js';
import { advance, deepFreeze, fcBudget, largeParamsArb, paramsArb, quotaParamsArb, startArb, stepsArb, type Step } from '../../helpers/fc-budget.js';

interface Lane {
  readonly algo: Algorithm<unknown>;
  readonly p: AlgorithmParams;
  state: unknown;
}

/**
 * Runs token-bucket, gcra and leaky-bucket (meter, and queue) side by side on
 * one request sequence, each with its own state, and returns how many
 * decisions were compared.
 */
function lockstep(p: AlgorithmParams, start: number, steps: readonly Step[]): { decisions: number; rejected: number } {
  const lanes: Lane[] = [
    { algo: tokenBucket, p, state: undefined },
    { algo: gcra, p, state: undefined },
    { algo: leakyBucket, p: { ...p, queue: false }, state: undefined },
    { algo: leakyBucket, p: { ...p, queue: true }, state: undefined },
  ];
  let now = start;
  let lastRetry = 0;
  let rejected = 0;
  for (const step of steps) {
    now = advance(now, step, p.windowMs, lastRetry);
    const results = lanes.map((lane) => lane.algo.decide(deepFreeze(lane.state), now, step.cost, lane.p));
    const [first] = results;
    if (first === undefined) throw new Error('no lanes');
    const meter = (r: typeof first) => ({ allowed: r.allowed, remaining: r.remaining, retryAfterMs: r.retryAfterMs, resetMs: r.resetMs });
    for (let i = 1; i < results.length; i++) {
      const r = results[i] ?? first;
      // Compare cheaply; hand a mismatch to expect() for a readable failure.
      if (r.allowed !== first.allowed || r.remaining !== first.remaining || r.retryAfterMs !== first.retryAfterMs || r.resetMs !== first.resetMs) {
        expect(meter(r), `${lanes[i]?.algo.name ?? ''}${lanes[i]?.p.queue === true ? ' (queue)' : ''} at ${now}`).toEqual(meter(first));
      }
      // Only the queue adds a delay.
      if (i < 3 && r.delayMs !== 0) expect(r.delayMs, lanes[i]?.algo.name).toBe(0);
    }
    if (first.delayMs !== 0) expect(first.delayMs, 'token-bucket').toBe(0);
    results.forEach((r, i) => {
      const lane = lanes[i];
      if (lane !== undefined && r.allowed && step.cost > 0) lane.state = r.state;
    });
    lastRetry = first.retryAfterMs;
    if (!first.allowed) rejected++;
  }
  return { decisions: steps.length, rejected };
}

describe('token-bucket, gcra and leaky-bucket are the same meter', () => {
  it('make identical allowed / remaining / retryAfterMs / resetMs decisions with the same N, W, B (small parameters)', () => {
    const totals = { decisions: 0, rejected: 0 };
    fc.assert(
      fc.property(
        paramsArb({ burst: true }).chain((p) => fc.tuple(fc.constant(p), startArb, stepsArb(p, p.burst, 80))),
        ([p, start, steps]) => {
          const r = lockstep(p, start, steps);
          totals.decisions += r.decisions;
          totals.rejected += r.rejected;
        },
      ),
      fcBudget({ runs: 300 }),
    );
    expect(totals.rejected).toBeGreaterThan(500);
  });

  it('... and with limit*window and burst*window up to 2^49', () => {
    const totals = { runs: 0, decisions: 0, rejected: 0 };
    fc.assert(
      fc.property(
        largeParamsArb({ burst: true }).chain((p) => fc.tuple(fc.constant(p), startArb, stepsArb(p, p.burst, 40))),
        ([p, start, steps]) => {
          const r = lockstep(p, start, steps);
          totals.runs++;
          totals.decisions += r.decisions;
          totals.rejected += r.rejected;
        },
      ),
      fcBudget({ runs: 150 }),
    );
    // A starved (time-interrupted) run passes on the runs it did: make sure it did some, and met rejections.
    expect(totals.runs).toBeGreaterThanOrEqual(10);
    expect(totals.rejected).toBeGreaterThan(50);
  });

  it('... and at quota magnitudes (limits up to 10^12, windows up to 366 days), in the scaled units', () => {
    const totals = { runs: 0, rejected: 0 };
    fc.assert(
      fc.property(
        quotaParamsArb({ burst: true }).chain((p) => fc.tuple(fc.constant(p), startArb, stepsArb(p, p.burst, 40))),
        ([p, start, steps]) => {
          totals.rejected += lockstep(p, start, steps).rejected;
          totals.runs++;
        },
      ),
      fcBudget({ runs: 150 }),
    );
    expect(totals.runs).toBeGreaterThanOrEqual(10);
    expect(totals.rejected).toBeGreaterThan(50);
  });

  it('a fractional emission interval (W/N = 333.33 ms) keeps them in step over 10^5 greedy requests', () => {
    const p = { limit: 3, windowMs: 1000, burst: 4, queue: false };
    const steps: Step[] = Array.from({ length: 100_000 }, (_, i) => ({ jump: 'dt', dt: i % 7 === 0 ? 0 : 1 + (i % 5), cost: 1 + (i % 3) }));
    const r = lockstep(p, 1_700_000_000_001, steps);
    expect(r.rejected).toBeGreaterThan(10_000);
  });
});
