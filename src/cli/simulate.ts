import { algorithms } from '../algorithms/registry.js';
import type { AlgorithmName, AlgorithmParams } from '../algorithms/types.js';
import { ManualClock } from '../core/clock.js';
import { formatDuration, parseDuration } from '../core/duration.js';
import { createLimiter } from '../limiter.js';
import type { Decision } from '../core/types.js';
import { memoryStore } from '../stores/memory/memory-store.js';

/** A traffic pattern: arrival times (ms, ascending) for one key. */
export type PatternName = 'boundary' | 'steady' | 'bursty';

/** Options of a simulation run. */
export interface SimulateOptions {
  readonly limit: number;
  readonly windowMs: number;
  readonly burst?: number | undefined;
  readonly pattern: PatternName;
  /** Number of windows to simulate. */
  readonly windows: number;
  /** How long a concurrency lease is held before release, ms. */
  readonly holdMs: number;
  readonly algorithms: readonly AlgorithmName[];
}

/** What one algorithm did on the pattern. */
export interface SimulationResult {
  readonly algorithm: AlgorithmName;
  readonly offered: number;
  readonly admitted: number;
  readonly rejected: number;
  /** Most admitted in any interval of one window length (concurrency: most in flight). */
  readonly maxInWindow: number;
  /** The algorithm's theoretical bound for the same quantity. */
  readonly bound: number;
  /** Admitted per tenth of a window, for a sparkline. */
  readonly timeline: readonly number[];
}

/**
 * Arrival times for a pattern. `boundary`: N requests in the last second of
 * each window and N in the first second of the next (the attack on fixed
 * windows). `steady`: 1.5 N per window, evenly spaced. `bursty`: 2 N in a 1%
 * slice at a pseudo-random point of each window (deterministic).
 */
export function arrivals(pattern: PatternName, limit: number, windowMs: number, windows: number): number[] {
  const out: number[] = [];
  const slice = Math.max(1, Math.min(1000, Math.floor(windowMs / 4)));
  if (pattern === 'boundary') {
    for (let k = 1; k <= windows; k += 2) {
      const edge = k * windowMs;
      for (let i = 0; i < limit; i++) out.push(edge - slice + Math.floor((i * slice) / limit));
      for (let i = 0; i < limit; i++) out.push(edge + Math.floor((i * slice) / limit));
    }
  } else if (pattern === 'steady') {
    const total = Math.floor(1.5 * limit * windows);
    for (let i = 0; i < total; i++) out.push(Math.floor((i * windowMs * windows) / total));
  } else {
    let seed = 12345;
    for (let k = 0; k < windows; k++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const start = k * windowMs + (seed % Math.max(1, windowMs - Math.ceil(windowMs / 100)));
      const width = Math.max(1, Math.ceil(windowMs / 100));
      for (let i = 0; i < 2 * limit; i++) out.push(start + Math.floor((i * width) / (2 * limit)));
    }
  }
  return out.sort((a, b) => a - b);
}

function maxInAnyInterval(times: readonly number[], length: number): number {
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < times.length; hi++) {
    while ((times[hi] as number) - (times[lo] as number) >= length) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

/** Runs every requested algorithm on the pattern with a virtual clock through a real limiter and memory store. */
export async function simulate(options: SimulateOptions): Promise<SimulationResult[]> {
  const times = arrivals(options.pattern, options.limit, options.windowMs, options.windows);
  const horizon = options.windows * options.windowMs + options.windowMs;
  const buckets = Math.ceil(horizon / (options.windowMs / 10));
  const results: SimulationResult[] = [];
  for (const name of options.algorithms) {
    const algo = algorithms[name];
    const clock = new ManualClock(0);
    const burst = algo.usesBurst ? options.burst : undefined;
    const limiter = createLimiter({
      clock,
      store: memoryStore(),
      limits: [{ name: 'sim', purpose: 'shedding', algorithm: name, limit: options.limit, window: options.windowMs, burst, key: 'global' }],
    });
    const params: AlgorithmParams = { limit: options.limit, windowMs: options.windowMs, burst: burst ?? options.limit, queue: false };
    const admittedAt: number[] = [];
    const held: Array<{ until: number; decision: Decision }> = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const timeline = new Array<number>(buckets).fill(0);
    for (const t of times) {
      clock.set(t);
      if (name === 'concurrency') {
        held.sort((a, b) => a.until - b.until);
        while (held.length > 0 && (held[0] as { until: number }).until <= t) {
          const lease = held.shift() as { decision: Decision };
          await lease.decision.release();
          inFlight--;
        }
      }
      const d = await limiter.check({});
      if (d.allowed) {
        admittedAt.push(t);
        const b = Math.floor(t / (options.windowMs / 10));
        timeline[b] = (timeline[b] ?? 0) + 1;
        if (name === 'concurrency') {
          held.push({ until: t + options.holdMs, decision: d });
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
        }
      }
    }
    results.push({
      algorithm: name,
      offered: times.length,
      admitted: admittedAt.length,
      rejected: times.length - admittedAt.length,
      maxInWindow: name === 'concurrency' ? maxInFlight : maxInAnyInterval(admittedAt, options.windowMs),
      bound: algo.bound(params, options.windowMs),
      timeline,
    });
  }
  return results;
}

const BOUND_TEXT: Readonly<Record<AlgorithmName, string>> = {
  'fixed-window': '2N: N per aligned window, both sides of a boundary',
  'sliding-log': 'N in every trailing window',
  'sliding-window': 'N per aligned window, under 2N in any window',
  'token-bucket': 'B + r*t',
  'leaky-bucket': 'B + r*t',
  gcra: 'B + t/T',
  concurrency: 'N in flight',
};

const SPARK = ' ▁▂▃▄▅▆▇█';

function sparkline(values: readonly number[]): string {
  const max = Math.max(1, ...values);
  return values.map((v) => SPARK[Math.min(8, Math.ceil((v / max) * 8))] ?? ' ').join('');
}

/** Renders results as a terminal table. */
export function renderTable(options: SimulateOptions, results: readonly SimulationResult[]): string {
  const w = formatDuration(options.windowMs);
  const lines: string[] = [];
  lines.push(
    `ratecontract simulate: pattern '${options.pattern}', limit ${options.limit} per ${w}` +
      (options.burst !== undefined ? `, burst ${options.burst}` : '') +
      `, ${options.windows} windows, virtual clock`,
  );
  lines.push('');
  const header = ['algorithm', 'offered', 'admitted', 'rejected', `max in any ${w}`, 'bound', 'bound rule'];
  const rows = results.map((r) => [
    r.algorithm,
    String(r.offered),
    String(r.admitted),
    String(r.rejected),
    r.algorithm === 'concurrency' ? `${r.maxInWindow} in flight` : String(r.maxInWindow),
    String(r.bound),
    BOUND_TEXT[r.algorithm],
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const fmt = (row: readonly string[]): string =>
    row.map((cell, i) => (i === 0 || i === row.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ').trimEnd();
  lines.push(fmt(header));
  lines.push(widths.map((n) => '-'.repeat(n)).join('  '));
  for (const row of rows) lines.push(fmt(row));
  lines.push('');
  lines.push(`admitted over time (one column per ${formatDuration(Math.floor(options.windowMs / 10))}):`);
  const nameWidth = Math.max(...results.map((r) => r.algorithm.length));
  for (const r of results) lines.push(`  ${r.algorithm.padEnd(nameWidth)} |${sparkline(r.timeline)}|`);
  lines.push('');
  lines.push('The bound is the most the algorithm can ever admit in one window length (concurrency: in flight at once).');
  return lines.join('\n');
}

/** Parses `simulate` flags. */
export function parseSimulateArgs(argv: readonly string[]): SimulateOptions {
  const opts: { limit: number; windowMs: number; burst: number | undefined; pattern: PatternName; windows: number; holdMs: number; algorithms: AlgorithmName[] } = {
    limit: 100,
    windowMs: 60_000,
    burst: undefined,
    pattern: 'boundary',
    windows: 10,
    holdMs: 1000,
    algorithms: Object.keys(algorithms) as AlgorithmName[],
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    switch (arg) {
      case '--limit':
        opts.limit = Number(value());
        break;
      case '--window':
        opts.windowMs = parseDuration(/^\d+$/.test(argv[i + 1] ?? '') ? Number(value()) : value(), '--window');
        break;
      case '--burst':
        opts.burst = Number(value());
        break;
      case '--pattern': {
        const p = value();
        if (p !== 'boundary' && p !== 'steady' && p !== 'bursty') throw new Error(`--pattern must be boundary, steady or bursty, got ${p}`);
        opts.pattern = p;
        break;
      }
      case '--windows':
        opts.windows = Number(value());
        break;
      case '--hold':
        opts.holdMs = parseDuration(/^\d+$/.test(argv[i + 1] ?? '') ? Number(value()) : value(), '--hold');
        break;
      case '--algorithms': {
        const list = value().split(',');
        for (const a of list) if (!Object.hasOwn(algorithms, a)) throw new Error(`unknown algorithm ${a}; expected ${Object.keys(algorithms).join(', ')}`);
        opts.algorithms = list as AlgorithmName[];
        break;
      }
      default:
        throw new Error(`unknown option ${arg}`);
    }
  }
  for (const [flag, v] of [['--limit', opts.limit], ['--windows', opts.windows]] as const) {
    if (!Number.isSafeInteger(v) || v <= 0 || v > 100_000) throw new Error(`${flag} must be an integer from 1 to 100000`);
  }
  if (opts.burst !== undefined && (!Number.isSafeInteger(opts.burst) || opts.burst <= 0)) throw new Error('--burst must be a positive integer');
  return opts;
}
