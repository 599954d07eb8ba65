import { describe, expect, it } from 'vitest';
import { createLimiter, gcra, ManualClock, type AlgorithmParams, type GcraState } from '../../../packages/ratecontract/src/index.js';

/**
 * redis-cell's `it_rate_limits` reference table: max_burst 4, 1 token per
 * second (CL.THROTTLE key 4 1 1 cost). In ratecontract terms: limit 1 per
 * 1000 ms with burst 5 (redis-cell's max_burst counts the burst beyond the
 * first request). Columns: ms since start, cost, limited, remaining,
 * reset_after (our resetMs), retry_after (-1: not limited, or never fits).
 */
const TABLE: ReadonlyArray<readonly [at: number, cost: number, limited: boolean, remaining: number, resetAfter: number, retryAfter: number]> = [
  [0, 6, true, 5, 0, -1], // cost above the burst: never fits
  [0, 1, false, 4, 1000, -1],
  [0, 1, false, 3, 2000, -1],
  [0, 1, false, 2, 3000, -1],
  [0, 1, false, 1, 4000, -1],
  [0, 1, false, 0, 5000, -1],
  [0, 1, true, 0, 5000, 1000],
  [3000, 1, false, 2, 3000, -1],
  [3100, 1, false, 1, 3900, -1],
  [4000, 1, false, 1, 4000, -1],
  [8000, 1, false, 4, 1000, -1],
  [9500, 1, false, 4, 1000, -1],
  [9500, 0, false, 4, 1000, -1], // cost 0: a peek
  [9500, 2, false, 2, 3000, -1],
  [9500, 5, true, 2, 3000, 3000],
];

/** What redis-cell's retry_after of -1 means for a limited row: the request can never fit. */
function expectedRetry(limited: boolean, retryAfter: number): number {
  if (!limited) return 0;
  return retryAfter === -1 ? Infinity : retryAfter;
}

// The same contract written three ways: T = W/N = 1000 ms in each.
const PARAMS: ReadonlyArray<readonly [string, AlgorithmParams]> = [
  ['limit 1 / 1000 ms', { limit: 1, windowMs: 1000, burst: 5, queue: false }],
  ['limit 2 / 2000 ms', { limit: 2, windowMs: 2000, burst: 5, queue: false }],
  ['limit 60 / 60000 ms', { limit: 60, windowMs: 60_000, burst: 5, queue: false }],
];

describe('gcra reproduces redis-cell it_rate_limits', () => {
  describe.each(PARAMS)('%s, burst 5', (_label, p) => {
    it.each([0, 1_700_000_000_000, 1_700_000_000_777])('row by row from start %i', (start) => {
      let state: GcraState | undefined;
      TABLE.forEach(([at, cost, limited, remaining, resetAfter, retryAfter], row) => {
        const r = gcra.decide(state, start + at, cost, p);
        expect({ row, allowed: r.allowed, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs }).toEqual({
          row,
          allowed: !limited,
          remaining,
          resetMs: resetAfter,
          retryAfterMs: expectedRetry(limited, retryAfter),
        });
        // State carries over only when a row is admitted and consumes.
        if (r.allowed && cost > 0) state = r.state;
      });
    });
  });

  it('the same table through createLimiter and the memory store (the cost-0 peek row is not a check())', async () => {
    const start = 1_700_000_000_000;
    const clock = new ManualClock(start);
    const limiter = createLimiter({
      clock,
      limits: [{ name: 'cell', purpose: 'shedding', algorithm: 'gcra', limit: 1, window: '1s', burst: 5, key: 'ip' }],
    });
    let checked = 0;
    for (const [at, cost, limited, remaining, resetAfter, retryAfter] of TABLE) {
      if (cost === 0) continue;
      clock.set(start + at);
      const d = await limiter.check({ ip: '192.0.2.7' }, { cost });
      const r = d.results[0];
      expect([d.allowed, r?.remaining, r?.resetMs, d.retryAfterMs]).toEqual([!limited, remaining, resetAfter, expectedRetry(limited, retryAfter)]);
      checked++;
    }
    expect(checked).toBe(TABLE.length - 1);
  });
});
