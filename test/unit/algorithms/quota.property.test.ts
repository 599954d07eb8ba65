/**
 * Quota-sized limits (beyond max(N, B) * W = 2^49): the bucket algorithms
 * count in scaled units there (src/algorithms/scale.ts), and every rounding
 * that forces must go toward the stricter answer. These properties compare
 * them with the ideal meter of rate exactly N/W, computed in BigInt.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { algorithms, gcra, leakyBucket, slidingWindow, tokenBucket, type Algorithm, type AlgorithmName, type AlgorithmParams, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { bucketScale } from '../../../packages/ratecontract/src/algorithms/scale.js';
import { mulDivFloor } from '../../../packages/ratecontract/src/algorithms/types.js';
import { ADVERSARIAL_SLIDING, drive, fcBudget, quotaParamsArb, trafficArb } from '../../helpers/fc-budget.js';

const big = BigInt;
const DAY = 86_400_000;

/**
 * The ideal token bucket of B tokens refilled at exactly N/W per ms, in
 * units of 1/W token, in BigInt: no rounding at any magnitude.
 */
class IdealBucket {
  #u: bigint;
  #t = 0n;
  readonly #cap: bigint;
  constructor(readonly p: AlgorithmParams) {
    this.#cap = big(p.burst) * big(p.windowMs);
    this.#u = this.#cap;
  }
  #level(now: number): bigint {
    const u = this.#u + (big(now) - this.#t) * big(this.p.limit);
    return u < this.#cap ? u : this.#cap;
  }
  fits(now: number, cost: number): boolean {
    return this.#level(now) >= big(cost) * big(this.p.windowMs);
  }
  /** Exact wait in ms until `cost` fits (ceil), 0 if it fits now. */
  wait(now: number, cost: number): bigint {
    const short = big(cost) * big(this.p.windowMs) - this.#level(now);
    return short <= 0n ? 0n : (short + big(this.p.limit) - 1n) / big(this.p.limit);
  }
  take(now: number, cost: number): void {
    this.#u = this.#level(now) - big(cost) * big(this.p.windowMs);
    this.#t = big(now);
  }
}

const BUCKETS: ReadonlyArray<readonly [string, Algorithm<unknown>, boolean]> = [
  ['token-bucket', tokenBucket, false],
  ['gcra', gcra, false],
  ['leaky-bucket (meter)', leakyBucket, false],
  ['leaky-bucket (queue)', leakyBucket, true],
];

describe.each(BUCKETS)('%s at quota magnitudes, against the ideal meter', (_label, algo, queue) => {
  it('admits only what the ideal meter admits, and never reports a wait shorter than the ideal wait', () => {
    let rejections = 0;
    fc.assert(
      fc.property(trafficArb(algo, quotaParamsArb({ burst: true, queue })), (traffic) => {
        const ideal = new IdealBucket(traffic.p);
        for (const d of drive(algo, traffic)) {
          if (d.result.allowed) {
            // Admit less, never more: every admission fits the ideal bucket fed the same admissions.
            expect(ideal.fits(d.now, d.cost), `admitted cost ${d.cost} at ${d.now} beyond the ideal meter`).toBe(true);
            if (d.cost > 0) ideal.take(d.now, d.cost);
            continue;
          }
          if (d.cost > traffic.p.burst) continue;
          rejections++;
          // Wait longer, never shorter.
          expect(big(d.result.retryAfterMs) >= ideal.wait(d.now, d.cost), `retry ${d.result.retryAfterMs} < ideal ${ideal.wait(d.now, d.cost)}`).toBe(true);
        }
      }),
      fcBudget(),
    );
    expect(rejections).toBeGreaterThan(50);
  });
});

describe('the scaled units of the bucket algorithms', () => {
  const paramsArb = quotaParamsArb({ burst: true });

  it('are the exact units K = N, T = W within 2^49, unchanged', () => {
    for (const p of [
      { limit: 3, windowMs: 1000, burst: 2, queue: false },
      { limit: 1_000_000, windowMs: DAY, burst: 1_000_000, queue: false },
      { limit: 2 ** 49, windowMs: 1, burst: 1, queue: false },
    ]) {
      expect(bucketScale(p)).toEqual({ K: p.limit, T: p.windowMs });
    }
  });

  it('beyond 2^49: a token never costs less than W/N ms, the bucket fits 2^51, and the rate is short of N/W by less than N/(W*K)', () => {
    fc.assert(
      fc.property(paramsArb, (p) => {
        const { K, T } = bucketScale(p);
        expect(Number.isSafeInteger(K) && K >= 1 && Number.isSafeInteger(T) && T >= 1).toBe(true);
        // T/K >= W/N: the stricter side.
        expect(big(T) * big(p.limit) >= big(p.windowMs) * big(K)).toBe(true);
        // ... by less than one unit: T/K - W/N < 1/K, so 1 - (K/T)/(N/W) < N/(W*K).
        expect(big(T - 1) * big(p.limit) < big(p.windowMs) * big(K)).toBe(true);
        // ... and N/(W*K), the documented figure, is under 2*max(N, B)/(2^51 - B): under 0.1% up to 2^40.
        expect(p.limit / (p.windowMs * K)).toBeLessThan((2 * Math.max(p.limit, p.burst)) / (2 ** 51 - p.burst));
        expect(p.limit / (p.windowMs * K)).toBeLessThan(1e-3);
        expect(p.burst * T).toBeLessThanOrEqual(2 ** 51);
        expect(p.windowMs * K).toBeLessThanOrEqual(2 ** 51);
        // K is the largest power of two that keeps both: doubling it breaks one.
        const T2 = Math.ceil((p.windowMs * 2 * K) / p.limit);
        expect(p.windowMs * 2 * K > 2 ** 51 || p.burst * T2 > 2 ** 51).toBe(true);
      }),
      fcBudget({ runs: 500 }),
    );
  });

  // The figures docs/algorithms.md publishes ("Quota-sized limits"): relative shortfall of the rate.
  it.each([
    ['10^7 per day', 10_000_000, DAY, 2e-7],
    ['10^9 per 30 days', 1_000_000_000, 30 * DAY, 2e-6],
    ['10^12 per 30 days', 1_000_000_000_000, 30 * DAY, 2e-3],
    ['10^12 per 366 days', 1_000_000_000_000, 366 * DAY, 2e-3],
    ['10^12 per day', 1_000_000_000_000, DAY, 2e-3],
  ])('%s: the rate falls short of N/W by less than the documented bound', (_label, limit, windowMs, documented) => {
    const p = { limit, windowMs, burst: limit, queue: false };
    const { K, T } = bucketScale(p);
    const shortfall = 1 - (K / T) / (limit / windowMs);
    expect(shortfall).toBeGreaterThanOrEqual(0);
    expect(shortfall).toBeLessThan(documented);
    expect(shortfall).toBeLessThan(limit / (windowMs * K));
  });

  it('a greedy client over a whole window gets the documented share of N: B at once, then the refill', () => {
    // 10^12 bytes per 30 days, burst 10^9 (above one minute of refill): spend the burst, then take whatever has refilled, once a minute.
    const p = { limit: 1_000_000_000_000, windowMs: 30 * DAY, burst: 1_000_000_000, queue: false };
    let state: ReturnType<typeof tokenBucket.decide>['state'];
    let got = 0;
    const start = 1_700_000_000_000;
    for (let now = start; now < start + p.windowMs; now += 60_000) {
      const peek = tokenBucket.decide(state, now, 0, p);
      if (peek.remaining === 0) continue;
      const r = tokenBucket.decide(state, now, peek.remaining, p);
      expect(r.allowed).toBe(true);
      state = r.state;
      got += peek.remaining;
    }
    // The ideal meter admits at most B + N*(W - 60000)/W here; the scaled one stays below that and within 0.2% of it.
    const ideal = p.burst + (p.limit * (p.windowMs - 60_000)) / p.windowMs;
    expect(got).toBeLessThanOrEqual(ideal);
    expect(got).toBeGreaterThan(ideal * (1 - 2e-3));
  });
});

describe('sliding-window where doubles would round the wrong way', () => {
  it.each(ADVERSARIAL_SLIDING)('prev %d, %d ms into a window of %d ms: admits exactly up to N - ceil(prev * (W - elapsed) / W)', (prev, elapsed, W) => {
    const N = 2 ** 40;
    const p = { limit: N, windowMs: W, burst: N, queue: false };
    // Doubles get the quotient wrong here; BigInt does not.
    const exact = (big(prev) * big(elapsed)) / big(W);
    expect(big(Math.floor((prev * elapsed) / W))).not.toBe(exact);
    const held = prev - Number(exact);
    const w = 50 * W;
    const state = { w, c: 0, p: prev };
    const now = w + elapsed;
    const fits = slidingWindow.decide(state, now, N - held, p);
    expect([fits.allowed, fits.remaining]).toEqual([true, 0]);
    const over = slidingWindow.decide(state, now, N - held + 1, p);
    expect(over.allowed).toBe(false);
    expect(over.remaining).toBe(N - held);
    // ... and its wait is exact: admitted at now + retryAfterMs, not 1 ms earlier.
    expect(slidingWindow.decide(state, now + over.retryAfterMs, N - held + 1, p).allowed).toBe(true);
    expect(slidingWindow.decide(state, now + over.retryAfterMs - 1, N - held + 1, p).allowed).toBe(false);
  });
});

describe('mulDivFloor', () => {
  it.each(ADVERSARIAL_SLIDING)('floor(%d * %d / %d) is exact where doubles are one too high', (a, b, c) => {
    expect(big(mulDivFloor(a, b, c))).toBe((big(a) * big(b)) / big(c));
  });

  it('is floor(a*b/c) exactly, where a*b passes 2^53 (a < 2^41, b < 2^36, c < 2^40, quotient < 2^53)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 41 - 1 }),
        fc.integer({ min: 0, max: 2 ** 36 - 1 }),
        fc.integer({ min: 1, max: 2 ** 40 - 1 }),
        (a, b, c) => {
          const want = (big(a) * big(b)) / big(c);
          fc.pre(want < 2n ** 53n);
          expect(big(mulDivFloor(a, b, c))).toBe(want);
        },
      ),
      fcBudget({ runs: 5000 }),
    );
  });
});

describe('limits accepted at quota magnitudes', () => {
  const ALL: AlgorithmName[] = ['fixed-window', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'];
  const compile = (algorithm: AlgorithmName, limit: number, window: LimitDefinition['window'], burst?: number) =>
    compileLimit({ name: 'q', purpose: 'shedding', algorithm, limit, window, ...(burst === undefined ? {} : { burst }) }, 'limits[0]', new Set());

  it.each(ALL)('%s accepts 10^7 per day, 10^9 per 30 days, 10^12 per 30 and per 366 days, 2^40 per 2^35 ms, with a cost up to the burst', (algorithm) => {
    const algo = algorithms[algorithm];
    const shapes: ReadonlyArray<readonly [number, LimitDefinition['window']]> = [[10_000_000, '1d'], [1_000_000_000, '30d'], [1_000_000_000_000, '30d'], [1_000_000_000_000, '366d'], [2 ** 40, 2 ** 35]];
    for (const [limit, window] of shapes) {
      const l = compileLimit({ name: 'q', purpose: 'shedding', algorithm, limit, window, cost: limit }, 'limits[0]', new Set());
      expect([l.params.limit, l.cost]).toEqual([limit, limit]);
      // The whole capacity fits an empty state at once; one more never fits.
      const now = 1_700_000_000_000;
      expect(algo.decide(undefined, now, limit, l.params, 'a').allowed).toBe(true);
      const over = algo.decide(undefined, now, limit + 1, l.params, 'b');
      expect([over.allowed, over.retryAfterMs]).toEqual([false, Infinity]);
    }
  });

  it('sliding-log accepts a log that fits 100,000 entries and refuses one that does not, naming the bound', () => {
    expect(compile('sliding-log', 100_000, '366d').params.limit).toBe(100_000);
    expect(compile('sliding-log', 1_000_000_000_000, 100_000).params.windowMs).toBe(100_000);
    // Within 2^49 nothing changes: accepted as before, whatever the log.
    expect(compile('sliding-log', 1_000_000, '1h').params.limit).toBe(1_000_000);
    expect(() => compile('sliding-log', 1_000_000_000, '30d')).toThrow(/sliding-log keeps up to min\(limit, window in ms\) = 1000000000 log entries per key, above its memory budget of 100000 entries/);
  });

  it('refuses beyond limit 2^40 or a window of 2^35 ms, and a bucket whose refill time does not fit, naming the bound', () => {
    expect(() => compile('gcra', 2 ** 40 + 1, '30d')).toThrow(/within 2\^40/);
    expect(() => compile('fixed-window', 1_000_000, 2 ** 35 + 1)).toThrow(/within 2\^35 ms/);
    // One token per year with a burst of 10^12: the bucket's refill time is 3 * 10^22 ms.
    expect(() => compile('token-bucket', 1, '366d', 1_000_000_000_000)).toThrow(/burst x ceil\(window \/ limit\) must stay within 2\^51/);
  });
});
