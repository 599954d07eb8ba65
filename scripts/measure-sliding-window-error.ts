/**
 * Measures how far the two-counter sliding-window estimate is from an exact
 * sliding log on near-limit traffic, and prints a Markdown table (published
 * in docs/algorithms.md).
 *
 *   npx tsx scripts/measure-sliding-window-error.ts [--windows 200] [--seeds 3]
 *
 * Deterministic: every scenario uses a seeded PRNG (mulberry32).
 */
import { pathToFileURL } from 'node:url';
import { slidingLog, slidingWindow, type Algorithm, type AlgorithmParams } from '../packages/ratecontract/src/index.js';

/** Arrival pattern: plain Poisson, or on/off bursts with the same mean rate. */
export type Shape = 'poisson' | 'bursty';

export interface Scenario {
  readonly limit: number;
  readonly windowMs: number;
  /** Offered load as a multiple of N/W. */
  readonly load: number;
  readonly shape: Shape;
}

export interface Measurement extends Scenario {
  readonly requests: number;
  /** Share of requests decided differently by the algorithm and an exact sliding log, each run on its own. */
  readonly disagreement: number;
  /** Share of requests the algorithm admitted that an exact log over the same admitted history would have rejected. */
  readonly falseAdmit: number;
  /** Share of requests the algorithm rejected that an exact log over the same admitted history would have admitted. */
  readonly falseReject: number;
  /** Mean over seeds of |admitted - admitted by the exact log| / admitted by the exact log (independent runs). */
  readonly rateError: number;
  /** Signed version of `rateError`: > 0 means the algorithm admits more than the exact log. */
  readonly rateBias: number;
  /** Mean |estimate - exact count in (t-W, t]| / exact count, over requests with a non-zero exact count. */
  readonly estimateError: number;
  /** Largest admitted count in any W-long interval, as a multiple of N (max over seeds). */
  readonly peak: number;
}

export interface MeasureOptions {
  /** Windows of traffic per run (the first one is warm-up and not counted). Default 200. */
  readonly windows?: number;
  /** Seeds (runs) per scenario. Default 3. */
  readonly seeds?: number;
  /** The algorithm under test; default sliding-window. Anything with N per W works, e.g. fixed-window as a control. */
  readonly algorithm?: Algorithm<unknown>;
}

/** mulberry32: a small, fast, seeded PRNG with a 2^32 period; enough for traffic. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Integer-ms arrival times over `[start, start + span)`, mean rate `perMs`. */
export function arrivals(rand: () => number, start: number, span: number, perMs: number, shape: Shape, windowMs: number): number[] {
  const out: number[] = [];
  let t = 0;
  if (shape === 'poisson') {
    for (;;) {
      t += -Math.log(1 - rand()) / perMs;
      if (t >= span) return out;
      out.push(start + Math.floor(t));
    }
  }
  // Bursty: alternating on and off periods, each exponential with mean W/4;
  // the rate is doubled while on, so the mean rate stays perMs.
  const meanPeriod = Math.max(1, windowMs / 4);
  let on = rand() < 0.5;
  let periodEnd = -Math.log(1 - rand()) * meanPeriod;
  while (t < span) {
    if (on) {
      t += -Math.log(1 - rand()) / (2 * perMs);
      if (t < periodEnd && t < span) {
        out.push(start + Math.floor(t));
        continue;
      }
    }
    t = periodEnd;
    on = !on;
    periodEnd = t + -Math.log(1 - rand()) * meanPeriod;
  }
  return out;
}

/** Index of the first element of sorted `a` that is >= x. */
function lowerBound(a: readonly number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((a[mid] ?? 0) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Count of sorted `a` in [from, to]. */
function countIn(a: readonly number[], from: number, to: number): number {
  return lowerBound(a, to + 1) - lowerBound(a, from);
}

/** Runs `algo` over `times` (cost 1 each); returns the admitted times. `onDecision` sees each decision with the history before it. */
function run(algo: Algorithm<unknown>, p: AlgorithmParams, times: readonly number[], onDecision?: (t: number, allowed: boolean, admitted: readonly number[]) => void): number[] {
  let state: unknown;
  const admitted: number[] = [];
  for (const t of times) {
    const r = algo.decide(state, t, 1, p);
    onDecision?.(t, r.allowed, admitted);
    if (r.allowed) {
      state = r.state;
      admitted.push(t);
    }
  }
  return admitted;
}

function peakInAnyWindow(admitted: readonly number[], W: number): number {
  let best = 0;
  let j = 0;
  for (let i = 0; i < admitted.length; i++) {
    while (j < admitted.length && (admitted[j] ?? 0) <= (admitted[i] ?? 0) + W - 1) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

/** Measures one scenario. */
export function measure(scenario: Scenario, options: MeasureOptions = {}): Measurement {
  const windows = options.windows ?? 200;
  const seeds = options.seeds ?? 3;
  const algo = options.algorithm ?? (slidingWindow);
  const { limit: N, windowMs: W, load, shape } = scenario;
  const p: AlgorithmParams = { limit: N, windowMs: W, burst: N, queue: false };
  let requests = 0;
  let disagree = 0;
  let falseAdmit = 0;
  let falseReject = 0;
  let rateError = 0;
  let rateBias = 0;
  let estErrSum = 0;
  let estErrCount = 0;
  let peak = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    const rand = mulberry32(seed * 7919 + N * 31 + W + Math.round(load * 1000) + (shape === 'bursty' ? 104729 : 0));
    // A start that is not window-aligned, far from the epoch.
    const start = 1_700_000_000_000 + Math.floor(rand() * W);
    const times = arrivals(rand, start, windows * W, (load * N) / W, shape, W);
    const measuredFrom = start + W;
    const decisions: boolean[] = [];
    const admittedAlgo = run(algo, p, times, (t, allowed, admitted) => {
      decisions.push(allowed);
      if (t < measuredFrom) return;
      requests++;
      const exact = countIn(admitted, t - W + 1, t);
      const exactAllows = exact + 1 <= N;
      if (allowed && !exactAllows) falseAdmit++;
      if (!allowed && exactAllows) falseReject++;
      const w = Math.floor(t / W) * W;
      const estimate = (countIn(admitted, w - W, w - 1) * (W - (t - w))) / W + countIn(admitted, w, t);
      if (exact > 0) {
        estErrSum += Math.abs(estimate - exact) / exact;
        estErrCount++;
      }
    });
    let i = 0;
    const admittedLog = run(slidingLog, p, times, (t, allowed) => {
      if (t >= measuredFrom && decisions[i] !== allowed) disagree++;
      i++;
    });
    const a = countIn(admittedAlgo, measuredFrom, Infinity);
    const b = countIn(admittedLog, measuredFrom, Infinity);
    rateError += Math.abs(a - b) / b;
    rateBias += (a - b) / b;
    peak = Math.max(peak, peakInAnyWindow(admittedAlgo, W) / N);
  }
  return {
    ...scenario,
    requests,
    disagreement: disagree / requests,
    falseAdmit: falseAdmit / requests,
    falseReject: falseReject / requests,
    rateError: rateError / seeds,
    rateBias: rateBias / seeds,
    estimateError: estErrCount === 0 ? 0 : estErrSum / estErrCount,
    peak,
  };
}

/** The published scenarios: several N/W at 0.8x-1.2x of N/W, Poisson and bursty. */
export const SCENARIOS: readonly Scenario[] = (
  [
    [10, 1000],
    [100, 60_000],
    [1000, 60_000],
  ] as const
).flatMap(([limit, windowMs]) =>
  (['poisson', 'bursty'] as const).flatMap((shape) => [0.8, 0.9, 1.0, 1.1, 1.2].map((load) => ({ limit, windowMs, load, shape }))),
);

const pct = (x: number, digits = 2): string => `${(x * 100).toFixed(digits)}%`;

/** Formats measurements as a Markdown table. */
export function table(rows: readonly Measurement[]): string {
  const head =
    '| N / W | load | traffic | requests | decisions differ (independent runs) | false admits | false rejects | admitted-rate error (bias) | estimate error | peak in any W |\n' +
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';
  const lines = rows.map(
    (m) =>
      `| ${m.limit} / ${m.windowMs} ms | ${m.load.toFixed(1)}x | ${m.shape} | ${m.requests} | ${pct(m.disagreement)} | ${pct(m.falseAdmit, 3)} | ${pct(m.falseReject, 3)} | ${pct(m.rateError)} (${m.rateBias >= 0 ? '+' : ''}${pct(m.rateBias)}) | ${pct(m.estimateError)} | ${m.peak.toFixed(2)} N |`,
  );
  return [head, ...lines].join('\n');
}

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const windows = argValue('--windows', 200);
  const seeds = argValue('--seeds', 3);
  const rows = SCENARIOS.map((s) => measure(s, { windows, seeds }));
  const all = (f: (m: Measurement) => number): number => rows.reduce((s, m) => s + f(m) * m.requests, 0) / rows.reduce((s, m) => s + m.requests, 0);
  console.log(`sliding-window vs exact sliding log: ${windows} windows x ${seeds} seeds per row (first window is warm-up)\n`);
  console.log(table(rows));
  console.log(
    `\nall rows, weighted by requests: decisions differ ${pct(all((m) => m.disagreement))}, false admits ${pct(all((m) => m.falseAdmit), 3)}, ` +
      `false rejects ${pct(all((m) => m.falseReject), 3)}, estimate error ${pct(all((m) => m.estimateError))}; ` +
      `mean admitted-rate error ${pct(rows.reduce((s, m) => s + m.rateError, 0) / rows.length)}; peak in any W ${Math.max(...rows.map((m) => m.peak)).toFixed(2)} N`,
  );
}
