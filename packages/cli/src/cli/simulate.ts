import { algorithms } from 'ratecontract';
import type { AlgorithmName, AlgorithmParams } from 'ratecontract';
import { ManualClock } from 'ratecontract';
import { createLimiter } from 'ratecontract';
import type { Decision } from 'ratecontract';
import { memoryStore } from 'ratecontract';
import { arrivals, type PatternName } from './patterns.js';

export { arrivals, type PatternName } from './patterns.js';

/** Options of a simulation run. */
export interface SimulateOptions {
  readonly limit: number;
  readonly windowMs: number;
  readonly burst?: number | undefined;
  /** A generated pattern, or `'trace'` with `times` given. */
  readonly pattern: PatternName | 'trace';
  /** Number of windows to simulate (a trace: the windows it spans). */
  readonly windows: number;
  /** Seed of the `bursty` and `poisson` patterns. */
  readonly seed: number;
  /** How long a concurrency lease is held before release, ms. */
  readonly holdMs: number;
  readonly algorithms: readonly AlgorithmName[];
  /** `pattern: 'trace'`: arrival times, ascending, integer ms from 0 (see `alignTrace`). */
  readonly times?: readonly number[] | undefined;
}

/** What one algorithm did on the traffic. */
export interface SimulationResult {
  readonly algorithm: AlgorithmName;
  readonly offered: number;
  readonly admitted: number;
  readonly rejected: number;
  /** Most admitted in any interval of one window length, W consecutive ms (concurrency: most in flight). */
  readonly maxInWindow: number;
  /** The algorithm's theoretical bound for the same quantity: `bound(params, W)` (concurrency: N). */
  readonly bound: number;
  /** The bound's rule in words. */
  readonly boundRule: string;
  /** Width of one column of the time series, ms. Column i covers [i * bucketMs, (i + 1) * bucketMs). */
  readonly bucketMs: number;
  /** Admitted per column. */
  readonly timeline: readonly number[];
  /**
   * Per column, the most admitted in a trailing window, [s - W + 1, s], for
   * any instant s of the column (concurrency: the most in flight). Its
   * maximum is `maxInWindow`; it is what the chart draws against `bound`.
   */
  readonly peakInWindow: readonly number[];
}

/** Most columns a time series gets; a long trace gets wider columns instead of more of them. */
export const MAX_COLUMNS = 600;

/** The bound rule of every algorithm, as the table and the chart print it. */
export const BOUND_TEXT: Readonly<Record<AlgorithmName, string>> = {
  'fixed-window': '2N: N per aligned window, both sides of a boundary',
  'sliding-log': 'N in every trailing window',
  'sliding-window': 'N per aligned window, under 2N in any window',
  'token-bucket': 'B + r*t',
  'leaky-bucket': 'B + r*t',
  gcra: 'B + t/T',
  concurrency: 'N in flight',
};

/** Column width for a run: a tenth of a window, widened so that the horizon needs at most `MAX_COLUMNS`. */
export function columnWidth(windowMs: number, horizonMs: number): number {
  return Math.max(1, Math.ceil(windowMs / 10), Math.ceil(horizonMs / MAX_COLUMNS));
}

/**
 * A trace's times moved onto the simulation clock: shifted by a whole number
 * of windows, so that the first falls in [0, W) and epoch-aligned windows
 * (fixed-window, sliding-window) see the same boundaries as in production.
 * Returns the shifted times, the shift (`origin`) and the windows they span.
 */
export function alignTrace(times: readonly number[], windowMs: number): { times: number[]; origin: number; windows: number } {
  const first = times[0] ?? 0;
  const origin = Math.floor(first / windowMs) * windowMs;
  const shifted = times.map((t) => t - origin);
  const last = shifted[shifted.length - 1] ?? 0;
  return { times: shifted, origin, windows: Math.floor(last / windowMs) + 1 };
}

/** The index of the first element of ascending `a` that is > `x`. */
function upperBound(a: readonly number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((a[mid] as number) <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Per column, the largest count of `at` (ascending instants) in a trailing
 * span [s - span + 1, s] over the instants s of the column. The count only
 * rises at an instant of `at`, so it is enough to look at the column's start
 * and at each instant in it.
 */
export function peaksPerColumn(at: readonly number[], span: number, width: number, columns: number): number[] {
  const count = (s: number): number => upperBound(at, s) - upperBound(at, s - span);
  const out = new Array<number>(columns).fill(0);
  for (let c = 0; c < columns; c++) out[c] = count(c * width);
  for (const t of at) {
    const c = Math.floor(t / width);
    if (c < columns) out[c] = Math.max(out[c] ?? 0, count(t));
  }
  return out;
}

/** The arrival times a run offers: the trace's, or the pattern's. */
export function offeredTimes(options: SimulateOptions): readonly number[] {
  if (options.pattern === 'trace') {
    if (options.times === undefined) throw new Error("simulate: pattern 'trace' needs times");
    return options.times;
  }
  return arrivals(options.pattern, options.limit, options.windowMs, options.windows, options.seed);
}

/** Runs every requested algorithm on the traffic with a virtual clock through a real limiter and memory store. */
export async function simulate(options: SimulateOptions): Promise<SimulationResult[]> {
  const times = offeredTimes(options);
  const horizon = options.windows * options.windowMs + options.windowMs;
  const width = columnWidth(options.windowMs, horizon);
  const columns = Math.ceil(horizon / width);
  const results: SimulationResult[] = [];
  for (const name of options.algorithms) {
    const algo = algorithms[name];
    const clock = new ManualClock(0);
    const burst = algo.usesBurst ? options.burst : undefined;
    const limiter = createLimiter({
      clock,
      defaultStore: memoryStore(),
      limits: [{ name: 'sim', purpose: 'shedding', algorithm: name, limit: options.limit, window: options.windowMs, burst, key: 'global' }],
    });
    const params: AlgorithmParams = { limit: options.limit, windowMs: options.windowMs, burst: burst ?? options.limit, queue: false };
    const admittedAt: number[] = [];
    // Concurrency leases, oldest first: every lease is held for the same time, so they end in admission order.
    const held: Array<{ until: number; decision: Decision }> = [];
    const timeline = new Array<number>(columns).fill(0);
    for (const t of times) {
      clock.set(t);
      while (held.length > 0 && (held[0] as { until: number }).until <= t) {
        await (held.shift() as { decision: Decision }).decision.release();
      }
      const d = await limiter.check({});
      if (!d.allowed) continue;
      admittedAt.push(t);
      const c = Math.floor(t / width);
      timeline[c] = (timeline[c] ?? 0) + 1;
      if (name === 'concurrency') held.push({ until: t + options.holdMs, decision: d });
    }
    await limiter.close();
    // A lease is in flight from its admission until it is released or expires (W), whichever is first.
    const span = name === 'concurrency' ? Math.min(options.holdMs, options.windowMs) : options.windowMs;
    const peakInWindow = peaksPerColumn(admittedAt, span, width, columns);
    results.push({
      algorithm: name,
      offered: times.length,
      admitted: admittedAt.length,
      rejected: times.length - admittedAt.length,
      maxInWindow: Math.max(0, ...peakInWindow),
      bound: algo.bound(params, options.windowMs),
      boundRule: BOUND_TEXT[name],
      bucketMs: width,
      timeline,
      peakInWindow,
    });
  }
  return results;
}
