import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { algorithms } from '../../../packages/ratecontract/src/algorithms/registry.js';
import type { AlgorithmName, AlgorithmParams } from '../../../packages/ratecontract/src/algorithms/types.js';
import { ArgumentError } from '../../../packages/cli/src/cli/args.js';
import { arrivals, PATTERNS, random } from '../../../packages/cli/src/cli/patterns.js';
import { parseSimulateArgs } from '../../../packages/cli/src/cli/simulate-command.js';
import { alignTrace, columnWidth, peaksPerColumn, simulate, type SimulateOptions, type SimulationResult } from '../../../packages/cli/src/cli/simulate.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const ALL = Object.keys(algorithms) as AlgorithmName[];

/** Most admitted among `at` (ascending) in any `span` consecutive ms, by brute force. */
function bruteMax(at: readonly number[], span: number): number {
  let best = 0;
  for (const t of at) best = Math.max(best, at.filter((u) => u > t - span && u <= t).length);
  return best;
}

/** The pure algorithm alone over the same arrivals, one request of cost 1 each: the instants it admits. */
function pureAdmissions(name: AlgorithmName, p: AlgorithmParams, times: readonly number[]): number[] {
  const algo = algorithms[name];
  let state: unknown;
  const out: number[] = [];
  for (const t of times) {
    const r = algo.decide(state, t, 1, p);
    if (r.allowed) {
      state = r.state;
      out.push(t);
    }
  }
  return out;
}

/** Runs of a property that met a rejection, and that met the fixed window above N (its bound beyond N exercised). */
const met = { rejections: 0, fixedAboveN: 0 };

function checkRun(options: SimulateOptions, results: readonly SimulationResult[], times: readonly number[]): void {
  expect(results.map((r) => r.algorithm)).toEqual(options.algorithms);
  if (results.some((r) => r.rejected > 0)) met.rejections++;
  if (results.some((r) => r.algorithm === 'fixed-window' && r.maxInWindow > options.limit)) met.fixedAboveN++;
  for (const r of results) {
    const algo = algorithms[r.algorithm];
    const p: AlgorithmParams = { limit: options.limit, windowMs: options.windowMs, burst: algo.usesBurst ? (options.burst ?? options.limit) : options.limit, queue: false };
    // The published bound, and never more than it.
    expect(r.bound).toBe(algo.bound(p, options.windowMs));
    expect(r.maxInWindow, r.algorithm).toBeLessThanOrEqual(r.bound);
    expect(r.offered).toBe(times.length);
    expect(r.admitted + r.rejected).toBe(r.offered);
    expect(r.timeline.reduce((a, b) => a + b, 0)).toBe(r.admitted);
    expect(Math.max(0, ...r.peakInWindow)).toBe(r.maxInWindow);
    if (r.algorithm !== 'concurrency') {
      // The limiter and store give the pure function's answers, and the max is the brute-force one.
      const admitted = pureAdmissions(r.algorithm, p, times);
      expect(r.admitted, r.algorithm).toBe(admitted.length);
      expect(r.maxInWindow, r.algorithm).toBe(bruteMax(admitted, options.windowMs));
    }
  }
}

const paramsArb = fc.record({
  limit: fc.integer({ min: 1, max: 20 }),
  windowMs: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(100, 1000, 60_000)),
  burst: fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }),
  holdFactor: fc.double({ min: 0.01, max: 2, noNaN: true }),
});

describe('ratecontract simulate: numbers against the algorithms\' bounds', () => {
  it('with defaults, shows the fixed window admitting 2N around a boundary and every algorithm within its bound', async () => {
    const options = parseSimulateArgs([]);
    expect([options.limit, options.windowMs, options.pattern, options.windows]).toEqual([100, 60_000, 'boundary', 10]);
    const results = await simulate(options);
    expect(results.map((r) => r.algorithm)).toEqual(ALL);
    checkRun(options, results, arrivals('boundary', 100, 60_000, 10));
    const by = Object.fromEntries(results.map((r) => [r.algorithm, r]));
    // The fixed window's 2N bound is attained; the sliding log holds exactly N.
    expect(by['fixed-window']).toMatchObject({ admitted: 1000, maxInWindow: 200, bound: 200 });
    expect(by['sliding-log']).toMatchObject({ admitted: 500, maxInWindow: 100, bound: 100 });
    expect(by.concurrency).toMatchObject({ maxInWindow: 100, bound: 100 });
    // The smoothing algorithms cut the boundary burst roughly in half.
    for (const name of ['sliding-window', 'token-bucket', 'gcra', 'leaky-bucket']) expect(by[name]?.maxInWindow).toBeLessThan(110);
  });

  it('property: on every pattern, for random limits, windows, bursts and seeds, the max admitted in any window never exceeds the bound', async () => {
    met.rejections = met.fixedAboveN = 0;
    await fc.assert(
      fc.asyncProperty(
        paramsArb,
        fc.constantFrom(...PATTERNS),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        async ({ limit, windowMs, burst, holdFactor }, pattern, windows, seed) => {
          const options: SimulateOptions = { limit, windowMs, burst, pattern, windows, seed, holdMs: Math.max(1, Math.round(holdFactor * windowMs)), algorithms: ALL };
          checkRun(options, await simulate(options), arrivals(pattern, limit, windowMs, windows, seed));
        },
      ),
      fcBudget({ runs: 60, ms: 8000 }),
    );
    expect(met.rejections).toBeGreaterThan(10);
    expect(met.fixedAboveN).toBeGreaterThan(5);
  });

  it('property: the same on arbitrary traces, moved onto the clock by whole windows', async () => {
    met.rejections = met.fixedAboveN = 0;
    await fc.assert(
      fc.asyncProperty(
        paramsArb,
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat({ max: 200 }), { maxLength: 150, size: 'max' }),
        async ({ limit, windowMs, burst, holdFactor }, epoch, starts, gaps) => {
          // Clusters of arrivals at an arbitrary epoch time, spread over up to 30 windows, with small gaps: bursts at window edges included.
          const raw = starts.flatMap((u) => {
            let t = epoch + Math.floor(u * 30 * windowMs);
            return [t, ...gaps.map((g) => (t += g))];
          });
          raw.sort((a, b) => a - b);
          const aligned = alignTrace(raw, windowMs);
          expect(aligned.origin % windowMs).toBe(0);
          expect(aligned.times[0]).toBeLessThan(windowMs);
          expect(aligned.times.map((t) => t + aligned.origin)).toEqual(raw);
          const options: SimulateOptions = {
            limit, windowMs, burst, pattern: 'trace', windows: aligned.windows, seed: 0,
            holdMs: Math.max(1, Math.round(holdFactor * windowMs)), algorithms: ALL, times: aligned.times,
          };
          checkRun(options, await simulate(options), aligned.times);
        },
      ),
      fcBudget({ runs: 40, ms: 8000 }),
    );
    expect(met.rejections).toBeGreaterThan(10);
    expect(met.fixedAboveN).toBeGreaterThan(2);
  });
});

describe('ratecontract simulate: patterns', () => {
  it('boundary puts N requests on each side of every other window boundary', () => {
    const t = arrivals('boundary', 100, 60_000, 2);
    expect(t.length).toBe(200);
    expect(t.filter((x) => x < 60_000).length).toBe(100);
    expect(Math.min(...t)).toBeGreaterThanOrEqual(59_000);
    expect(Math.max(...t)).toBeLessThan(61_000);
  });

  it('steady offers 1.5 N per window evenly; bursty 2 N inside 1% of each window', () => {
    const steady = arrivals('steady', 10, 1000, 4);
    expect(steady.length).toBe(60);
    expect(steady).toEqual(Array.from({ length: 60 }, (_, i) => Math.floor((i * 4000) / 60)));
    const bursty = arrivals('bursty', 10, 10_000, 5, 9);
    expect(bursty.length).toBe(100);
    for (let k = 0; k < 5; k++) {
      const inWindow = bursty.slice(k * 20, k * 20 + 20);
      expect(Math.max(...inWindow) - Math.min(...inWindow)).toBeLessThan(100);
      expect(Math.floor((inWindow[0] as number) / 10_000)).toBe(k);
    }
  });

  it('poisson has the mean rate of 1.5 N per window, depends only on the seed, and stays within the horizon', () => {
    const a = arrivals('poisson', 100, 1000, 200, 42);
    expect(arrivals('poisson', 100, 1000, 200, 42)).toEqual(a);
    expect(arrivals('poisson', 100, 1000, 200, 43)).not.toEqual(a);
    // 30,000 expected; a standard deviation is about 173.
    expect(Math.abs(a.length - 30_000)).toBeLessThan(5 * 173);
    expect(a.every((t, i) => Number.isInteger(t) && t >= 0 && t < 200_000 && (i === 0 || t >= (a[i - 1] as number)))).toBe(true);
    // Gaps are exponential: about e^-1 of them exceed the mean gap of 1000/150 ms.
    const gaps = a.slice(1).map((t, i) => t - (a[i] as number));
    const long = gaps.filter((g) => g > 1000 / 150).length / gaps.length;
    expect(long).toBeGreaterThan(0.33);
    expect(long).toBeLessThan(0.4);
  });

  it('the seeded generator is uniform enough and works with seed 0', () => {
    for (const seed of [0, 1, 2 ** 32 - 1]) {
      const next = random(seed);
      const xs = Array.from({ length: 20_000 }, next);
      expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
      const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
      expect(Math.abs(mean - 0.5)).toBeLessThan(0.01);
    }
  });
});

describe('ratecontract simulate: time series', () => {
  it('a column holds the most in any trailing span that ends in it', () => {
    // Admissions at 0, 1, 2 and 15, a span of 10 ms, columns of 5 ms: at 10 the span [1, 10] still holds 1 and 2.
    expect(peaksPerColumn([0, 1, 2, 15], 10, 5, 4)).toEqual([3, 3, 2, 1]);
    expect(peaksPerColumn([], 10, 5, 2)).toEqual([0, 0]);
  });

  it('columns are a tenth of a window, and wider when the horizon would need more than 600', () => {
    expect(columnWidth(60_000, 660_000)).toBe(6000);
    expect(columnWidth(7, 77)).toBe(1);
    expect(columnWidth(1000, 86_400_000)).toBe(144_000);
  });
});

describe('parseSimulateArgs', () => {
  it('rejects bad flags with a message naming them', () => {
    expect(() => parseSimulateArgs(['--pattern', 'sawtooth'])).toThrow(/--pattern/);
    expect(() => parseSimulateArgs(['--limit', '0'])).toThrow(/--limit/);
    expect(() => parseSimulateArgs(['--algorithms', 'gcra,nope'])).toThrow(/unknown algorithm nope/);
    expect(() => parseSimulateArgs(['--bogus'])).toThrow(ArgumentError);
    expect(() => parseSimulateArgs(['--bogus'])).toThrow('unknown option --bogus');
  });

  it('takes a window as ms or a duration, and the seed and hold', () => {
    expect(parseSimulateArgs(['--window', '250', '--hold', '2s', '--seed', '0', '--pattern', 'poisson'])).toMatchObject({ windowMs: 250, holdMs: 2000, seed: 0, pattern: 'poisson' });
    expect(parseSimulateArgs(['--window=15m', '--algorithms', 'gcra,sliding-log'])).toMatchObject({ windowMs: 900_000, algorithms: ['gcra', 'sliding-log'] });
  });
});
