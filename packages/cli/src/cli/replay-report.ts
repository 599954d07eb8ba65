import { createHmac, randomBytes } from 'node:crypto';
import { formatDuration } from 'ratecontract';
import { GLOBAL_KEY } from 'ratecontract/internal';
import { plural } from '../contract/plural.js';
import type { LogStats, MalformedLine } from './logs.js';
import { splitDiffKey, type ContractDiff, type ContractRun, type ContractTotals, type LimitTally, type UnroutedLine } from './replay.js';

/**
 * The report of `ratecontract replay`: one JSON document (`--json`), and the
 * table drawn from it. Keys are shown as keyed HMAC-SHA-256 prefixes, with a
 * secret drawn for the run, unless `--show-keys`: the same key has the same
 * hash throughout one report (the limits and the difference agree), and a
 * report cannot be turned back into addresses or account names by hashing
 * guesses, as a plain hash of an IPv4 address could.
 */

/** Hex characters of a hashed key. */
export const HASH_CHARS = 12;

/** Shows keys as they are, or hashed with a secret of this run. */
export function keyFormatter(show: boolean): (key: string) => string {
  if (show) return (key) => key;
  const secret = randomBytes(32);
  return (key) => (key === GLOBAL_KEY ? GLOBAL_KEY : createHmac('sha256', secret).update(key, 'utf8').digest('hex').slice(0, HASH_CHARS));
}

export interface ReportKey {
  readonly key: string;
  readonly rejections: number;
  /** How much of `rejections` may belong to other keys (space-saving's error); 0 when exact. */
  readonly error: number;
}

export interface ReportLimit {
  readonly name: string;
  readonly purpose: string;
  readonly key: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly shadow: boolean;
  readonly routes: readonly string[];
  readonly checked: number;
  readonly unkeyed: number;
  readonly wouldReject: number;
  /** `wouldReject / checked`, 0 when nothing was checked. */
  readonly share: number;
  readonly decided: number;
  readonly firstTrip: { readonly time: string; readonly line: number } | null;
  readonly topKeys: readonly ReportKey[];
}

export interface ReportContract {
  readonly config: string;
  readonly totals: Omit<ContractTotals, 'unroutedLines'> & { readonly unroutedLines: readonly UnroutedLine[] };
  readonly limits: readonly ReportLimit[];
}

export interface ReportDiffKey {
  readonly limit: string;
  readonly key: string;
  readonly requests: number;
  readonly error: number;
}

export interface ReportDiff {
  /** The old contract (`--against`). */
  readonly config: string;
  readonly newlyRejected: number;
  readonly newlyRejectedByLimit: ReadonlyArray<{ readonly limit: string; readonly requests: number }>;
  readonly newlyRejectedByKey: readonly ReportDiffKey[];
  readonly noLongerRejected: number;
  readonly noLongerRejectedByLimit: ReadonlyArray<{ readonly limit: string; readonly requests: number }>;
  readonly noLongerRejectedByKey: readonly ReportDiffKey[];
  /** The old contract's own replay. */
  readonly old: ReportContract;
}

export interface ReplayReport {
  readonly log: {
    readonly file: string;
    readonly format: string | null;
    readonly lines: number;
    readonly records: number;
    readonly blank: number;
    readonly malformed: number;
    readonly malformedLines: readonly MalformedLine[];
    readonly late: number;
    readonly firstTime: string | null;
    readonly lastTime: string | null;
  };
  /** `hashed` (HMAC-SHA-256 prefixes with a secret of this run) or `shown` (`--show-keys`). */
  readonly keys: 'hashed' | 'shown';
  /** Counters of heavy hitters per limit; a key with more than `rejections / keyCapacity` rejections is always listed. */
  readonly keyCapacity: number;
  readonly contract: ReportContract;
  readonly against: ReportDiff | null;
  readonly notes: readonly string[];
  readonly run: { readonly elapsedMs: number; readonly linesPerSecond: number; readonly peakRssBytes: number };
}

function iso(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}

function limitReport(t: LimitTally, top: number, show: (k: string) => string): ReportLimit {
  return {
    name: t.name,
    purpose: t.purpose,
    key: t.keySpec,
    algorithm: t.algorithm,
    limit: t.limit,
    windowMs: t.windowMs,
    shadow: t.shadow,
    routes: t.routes,
    checked: t.checked,
    unkeyed: t.unkeyed,
    wouldReject: t.wouldReject,
    share: t.checked === 0 ? 0 : t.wouldReject / t.checked,
    decided: t.decided,
    firstTrip: t.firstTrip === undefined ? null : { time: new Date(t.firstTrip.time).toISOString(), line: t.firstTrip.line },
    topKeys: t.top.top(top).map((k) => ({ key: show(k.key), rejections: k.count, error: k.error })),
  };
}

export function contractReport(run: ContractRun, top: number, show: (k: string) => string): ReportContract {
  return { config: run.config.file, totals: { ...run.totals }, limits: [...run.tallies.values()].map((t) => limitReport(t, top, show)) };
}

function byLimit(m: ReadonlyMap<string, number>): Array<{ limit: string; requests: number }> {
  return [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([limit, requests]) => ({ limit, requests }));
}

export function diffReport(diff: ContractDiff, old: ContractRun, top: number, show: (k: string) => string): ReportDiff {
  const keys = (list: ReturnType<ContractDiff['newlyByKey']['top']>): ReportDiffKey[] =>
    list.map(splitDiffKey).map((k) => ({ limit: k.limit, key: show(k.key), requests: k.count, error: k.error }));
  return {
    config: old.config.file,
    newlyRejected: diff.newlyRejected,
    newlyRejectedByLimit: byLimit(diff.newlyByLimit),
    newlyRejectedByKey: keys(diff.newlyByKey.top(top)),
    noLongerRejected: diff.noLongerRejected,
    noLongerRejectedByLimit: byLimit(diff.noLongerByLimit),
    noLongerRejectedByKey: keys(diff.noLongerByKey.top(top)),
    old: contractReport(old, top, show),
  };
}

export function logReport(file: string, s: LogStats): ReplayReport['log'] {
  return {
    file,
    format: s.format ?? null,
    lines: s.lines,
    records: s.records,
    blank: s.blank,
    malformed: s.malformed,
    malformedLines: s.malformedLines,
    late: s.late,
    firstTime: iso(s.firstTime),
    lastTime: iso(s.lastTime),
  };
}

const n = (x: number): string => x.toLocaleString('en-US');
const pct = (x: number): string => (x === 0 ? '0%' : x < 0.001 ? '<0.1%' : `${(x * 100).toFixed(1)}%`);

function table(head: readonly string[], rows: readonly (readonly string[])[], right: ReadonlySet<number>): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number)))
      .join('  ')
      .trimEnd();
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}

/** How many malformed and unrouted lines the table names. */
const TABLE_LINES = 10;

function contractLines(c: ReportContract, keys: ReplayReport['keys']): string[] {
  const t = c.totals;
  const out: string[] = [];
  out.push(
    `requests ${n(t.requests)}: limited ${n(t.limited)}, unlimited ${n(t.unlimited)}, no route ${n(t.unrouted)}; ` +
      `would reject ${n(t.wouldReject)} (${pct(t.limited === 0 ? 0 : t.wouldReject / t.limited)} of limited): rejected ${n(t.rejected)}, shadow-rejected ${n(t.shadowRejected)}`,
  );
  if (t.unroutedLines.length > 0) {
    const more = t.unrouted > t.unroutedLines.length ? ', ...' : '';
    out.push(`no route: ${t.unroutedLines.slice(0, TABLE_LINES).map((u) => `line ${u.line} ${u.method} ${u.path}`).join(', ')}${more}`);
  }
  out.push('');
  const rows = c.limits.map((l) => [
    l.name + (l.shadow ? ' (shadow)' : ''),
    l.purpose,
    l.key,
    `${l.limit}/${formatDuration(l.windowMs)}`,
    n(l.checked),
    n(l.unkeyed),
    n(l.wouldReject),
    pct(l.share),
    n(l.decided),
    l.firstTrip === null ? '-' : `${l.firstTrip.time} (line ${l.firstTrip.line})`,
  ]);
  out.push(...table(['limit', 'purpose', 'key', 'rate', 'checked', 'no key', 'would reject', 'share', 'decided', 'first trip'], rows, new Set([4, 5, 6, 7, 8])));
  const tripped = c.limits.filter((l) => l.topKeys.length > 0);
  if (tripped.length > 0) {
    out.push('', `top keys by rejections${keys === 'hashed' ? ' (hashed; --show-keys to see them)' : ''}:`);
    for (const l of tripped) {
      out.push(`  ${l.name}: ${l.topKeys.map((k) => `${k.key} ${n(k.rejections)}${k.error > 0 ? ` (±${n(k.error)})` : ''}`).join(', ')}`);
    }
  }
  return out;
}

/** The readable form of a report. */
export function renderReplay(r: ReplayReport): string {
  const log = r.log;
  const span = log.firstTime === null ? '' : `, ${log.firstTime} to ${log.lastTime ?? ''}`;
  const out: string[] = [
    `ratecontract replay: ${r.contract.config} over ${log.file} (${log.format ?? 'no format'}), ${plural(log.lines, 'line', { format: n })}${span}, virtual clock, memory stores`,
  ];
  const skipped = [plural(log.records, 'request', { format: n }), `${n(log.malformed)} malformed`, `${n(log.blank)} blank`];
  if (log.late > 0) skipped.push(`${n(log.late)} late (moved up in time)`);
  out.push(`lines: ${skipped.join(', ')}`);
  if (log.malformedLines.length > 0) {
    const shown = log.malformedLines.slice(0, TABLE_LINES);
    const more = log.malformed > shown.length ? `; ${n(log.malformed - shown.length)} more` : '';
    out.push(`malformed: ${shown.map((m) => `line ${m.line}: ${m.reason}`).join('; ')}${more}`);
  }
  out.push('', ...contractLines(r.contract, r.keys));
  const d = r.against;
  if (d !== null) {
    out.push('', `against ${d.config}: ${plural(d.newlyRejected, 'request', { format: n })} the new contract would reject that the old one did not; ${n(d.noLongerRejected)} the other way`);
    if (d.newlyRejectedByLimit.length > 0) out.push(`  newly rejected by limit: ${d.newlyRejectedByLimit.map((x) => `${x.limit} ${n(x.requests)}`).join(', ')}`);
    if (d.newlyRejectedByKey.length > 0) out.push(`  newly rejected by key: ${d.newlyRejectedByKey.map((x) => `${x.limit} ${x.key} ${n(x.requests)}${x.error > 0 ? ` (±${n(x.error)})` : ''}`).join(', ')}`);
    if (d.noLongerRejectedByLimit.length > 0) out.push(`  no longer rejected, by old limit: ${d.noLongerRejectedByLimit.map((x) => `${x.limit} ${n(x.requests)}`).join(', ')}`);
    if (d.noLongerRejectedByKey.length > 0) out.push(`  no longer rejected, by key: ${d.noLongerRejectedByKey.map((x) => `${x.limit} ${x.key} ${n(x.requests)}${x.error > 0 ? ` (±${n(x.error)})` : ''}`).join(', ')}`);
    out.push('', `the old contract, ${d.config}:`, ...contractLines(d.old, r.keys));
  }
  if (r.notes.length > 0) out.push('', ...r.notes.map((s) => `note: ${s}`));
  out.push('', `${plural(log.lines, 'line', { format: n })} in ${(r.run.elapsedMs / 1000).toFixed(2)} s (${n(Math.round(r.run.linesPerSecond))} lines/s), peak RSS ${(r.run.peakRssBytes / 2 ** 20).toFixed(0)} MiB`);
  return out.join('\n');
}
