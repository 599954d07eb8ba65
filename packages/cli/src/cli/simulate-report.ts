import { formatDuration } from 'ratecontract';
import { plural } from '../contract/plural.js';
import type { SimulateOptions, SimulationResult } from './simulate.js';

/** Where a run's traffic came from, for the table's first line and the JSON. */
export type TrafficSource =
  | { readonly kind: 'pattern' }
  | {
      readonly kind: 'trace';
      readonly file: string;
      /** Epoch ms (or trace ms) that the simulation clock's 0 stands for. */
      readonly origin: number;
      readonly lines: number;
      readonly malformed: number;
      readonly malformedLines: readonly number[];
    };

const SPARK = ' ▁▂▃▄▅▆▇█';

/** Most columns of the terminal sparkline; longer series are summed into wider columns. */
const TERMINAL_COLUMNS = 120;

function sparkline(values: readonly number[]): string {
  const max = Math.max(1, ...values);
  return values.map((v) => SPARK[Math.min(8, Math.ceil((v / max) * 8))] ?? ' ').join('');
}

/** Sums consecutive groups of `factor` values. */
function merge(values: readonly number[], factor: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < values.length; i += factor) out.push(values.slice(i, i + factor).reduce((a, b) => a + b, 0));
  return out;
}

function describeTraffic(options: SimulateOptions, source: TrafficSource): string {
  if (source.kind === 'trace') {
    const skipped = source.malformed > 0 ? `, ${plural(source.malformed, 'malformed line')} skipped` : '';
    return `trace ${source.file} (${plural(options.times?.length ?? 0, 'request')}${skipped})`;
  }
  const seeded = options.pattern === 'bursty' || options.pattern === 'poisson' ? `, seed ${options.seed}` : '';
  return `pattern '${options.pattern}'${seeded}`;
}

/** Renders results as a terminal table and a sparkline of admissions per algorithm. */
export function renderTable(options: SimulateOptions, results: readonly SimulationResult[], source: TrafficSource = { kind: 'pattern' }): string {
  const w = formatDuration(options.windowMs);
  const lines: string[] = [];
  lines.push(
    `ratecontract simulate: ${describeTraffic(options, source)}, limit ${options.limit} per ${w}` +
      (options.burst !== undefined ? `, burst ${options.burst}` : '') +
      `, ${plural(options.windows, 'window')}, virtual clock`,
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
    r.boundRule,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const fmt = (row: readonly string[]): string =>
    row.map((cell, i) => (i === 0 || i === row.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ').trimEnd();
  lines.push(fmt(header));
  lines.push(widths.map((n) => '-'.repeat(n)).join('  '));
  for (const row of rows) lines.push(fmt(row));
  const first = results[0];
  if (first !== undefined) {
    const factor = Math.ceil(first.timeline.length / TERMINAL_COLUMNS);
    lines.push('');
    lines.push(`admitted over time (one column per ${formatDuration(first.bucketMs * factor)}):`);
    const nameWidth = Math.max(...results.map((r) => r.algorithm.length));
    for (const r of results) lines.push(`  ${r.algorithm.padEnd(nameWidth)} |${sparkline(merge(r.timeline, factor))}|`);
  }
  lines.push('');
  lines.push('The bound is the most the algorithm can ever admit in one window length (concurrency: in flight at once).');
  return lines.join('\n');
}

/** The `--json` document of a run. Field meanings are in docs/cli.md. */
export function jsonReport(options: SimulateOptions, results: readonly SimulationResult[], source: TrafficSource = { kind: 'pattern' }): unknown {
  const traffic =
    source.kind === 'trace'
      ? {
          pattern: 'trace',
          file: source.file,
          origin: source.origin,
          lines: source.lines,
          malformed: source.malformed,
          malformedLines: source.malformedLines,
        }
      : { pattern: options.pattern, ...(options.pattern === 'bursty' || options.pattern === 'poisson' ? { seed: options.seed } : {}) };
  return {
    traffic: { ...traffic, windows: options.windows, offered: results[0]?.offered ?? 0 },
    limit: options.limit,
    windowMs: options.windowMs,
    burst: options.burst ?? null,
    holdMs: options.holdMs,
    bucketMs: results[0]?.bucketMs ?? 0,
    algorithms: results.map((r) => ({
      algorithm: r.algorithm,
      offered: r.offered,
      admitted: r.admitted,
      rejected: r.rejected,
      maxInWindow: r.maxInWindow,
      bound: r.bound,
      boundRule: r.boundRule,
      series: { admitted: r.timeline, peakInWindow: r.peakInWindow },
    })),
  };
}
