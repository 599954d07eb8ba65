import { readFileSync, writeFileSync } from 'node:fs';
import { ConfigError, formatDuration } from 'ratecontract';
import type { RateContractConfig } from 'ratecontract/config';
import { parseDocument } from 'yaml';
import { plural } from '../contract/plural.js';
import { ArgumentError, flagOption, integerOption, stringOption, type Command, type CommandIo, type ParsedArgs } from './args.js';
import { loadContract } from './check.js';
import { LOG_COMMAND_OPTIONS, SHOW_KEYS_OPTION, TENANT_HEADER_OPTION, thousands } from './log-command-options.js';
import { LogInputError, readLog, type LogFormat } from './logs.js';
import { ContractRun } from './replay.js';
import { keyFormatter, logReport, type ReplayReport } from './replay-report.js';
import { DEFAULT_MAX_KEYS, SUB_WINDOWS, SUGGEST_BYTES_PER_KEY, suggestion, threat, UsageTracker, type Distribution, type LimitUsage } from './suggest.js';

const FORMATS: readonly LogFormat[] = ['auto', 'combined', 'json'];
/** Lines between two progress lines on stderr. */
export const PROGRESS_LINES = 1_000_000;
/** Heavy-hitter counters per limit for the top keys (as replay). */
const KEY_CAPACITY = 1000;
const TOP = 10;


/** The `suggest` command: its options and usage, declared once. */
export const suggestCommand: Command = {
  name: 'suggest',
  summary: "derive each limit's N from an access log: per-key peak usage, the N a percentile suggests, and what the current N would block",
  fileOption: 'config',
  options: {
    ...LOG_COMMAND_OPTIONS,
    percentile: { type: 'string', value: 'P', description: 'the per-key peak the suggestion starts from, 50 to 100 (99.9 allowed)', default: '99' },
    headroom: { type: 'string', value: 'X', description: 'the factor above that peak, 1 to 100', default: '1.5' },
    'guess-space': { type: 'string', value: 'N', description: 'for abuse limits: the secrets an attacker guesses among (1000000: a 6-digit code)', default: '1000000' },
    'max-keys': { type: 'string', value: 'N', description: 'keys measured per limit before sampling, 100 to 1000000', default: String(DEFAULT_MAX_KEYS) },
    json: { type: 'boolean', description: 'print the report as one JSON document' },
    markdown: { type: 'boolean', description: 'print the report as Markdown tables' },
    write: { type: 'string', value: 'FILE', description: 'write the contract with the suggested numbers to FILE (for audit --against)' },
    'show-keys': SHOW_KEYS_OPTION,
    'tenant-header': TENANT_HEADER_OPTION,
  },
  details: [
    'Replays the log through each limit as `replay` does (a virtual clock, memory stores) and measures,',
    "per limit, each key's peak usage in any window (counted in 16 sub-windows of the limit's window):",
    'its p50, p90, p99, p99.9 and max over keys. The suggested N is the chosen percentile times the',
    'headroom; for token-bucket, leaky-bucket and gcra also a burst, from the peak in one sub-window.',
    'Beside it, what the current N would block: keys, their share of the traffic, the top keys; for',
    'abuse limits the attempts one key gets per day at each N and the time to guess among --guess-space.',
    '',
    `Memory is bounded: at most --max-keys keys per limit (then a uniform sample by hash), about ${SUGGEST_BYTES_PER_KEY}`,
    'bytes each, whatever the log. A progress line goes to stderr every million lines.',
    '',
    'Exit 0 with the report; 2 for bad usage, an invalid config, or a log that cannot be read or holds',
    'no request.',
    '',
    'Examples:',
    '  ratecontract suggest --config ratecontract.yaml --log access.log.gz',
    '  ratecontract suggest --config ratecontract.yaml --log access.log --percentile 99.9 --write suggested.yaml',
    '  ratecontract audit --config suggested.yaml --against ratecontract.yaml',
  ].join('\n'),
  run: runSuggest,
};

/** What the options of one run resolve to. */
export interface SuggestRequest {
  readonly config: string | undefined;
  readonly log: string;
  readonly format: LogFormat;
  readonly percentile: number;
  readonly headroom: number;
  readonly guessSpace: number;
  readonly maxKeys: number;
  readonly output: 'text' | 'json' | 'markdown';
  readonly write: string | undefined;
  readonly showKeys: boolean;
  readonly tenantHeader: string | undefined;
}

function numberOption(args: ParsedArgs, name: string, fallback: number, min: number, max: number): number {
  const raw = stringOption(args, name);
  if (raw === undefined) return fallback;
  const n = /^[0-9]+(\.[0-9]+)?$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isFinite(n) || n < min || n > max) throw new ArgumentError(`--${name} must be a number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

/** Checks the parsed options of `suggest`; every bad value is an `ArgumentError` naming its option. */
export function suggestRequest(args: ParsedArgs): SuggestRequest {
  const log = stringOption(args, 'log');
  if (log === undefined) throw new ArgumentError('--log is required (--log FILE, or --log - for stdin)');
  for (const name of ['log', 'config', 'write']) {
    if (stringOption(args, name) === '') throw new ArgumentError(`--${name} needs a file name`);
  }
  const format = stringOption(args, 'format') ?? 'auto';
  if (!(FORMATS as readonly string[]).includes(format)) throw new ArgumentError(`--format must be one of ${FORMATS.join(', ')}, got ${JSON.stringify(format)}`);
  if (flagOption(args, 'json') && flagOption(args, 'markdown')) throw new ArgumentError('--json and --markdown are exclusive: pick one');
  const tenantHeader = stringOption(args, 'tenant-header');
  if (tenantHeader !== undefined && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(tenantHeader)) {
    throw new ArgumentError(`--tenant-header must be a header name, got ${JSON.stringify(tenantHeader)}`);
  }
  return {
    config: stringOption(args, 'config'),
    log,
    format: format as LogFormat,
    percentile: numberOption(args, 'percentile', 99, 50, 100),
    headroom: numberOption(args, 'headroom', 1.5, 1, 100),
    guessSpace: integerOption(args, 'guess-space', 1_000_000, 2, Number.MAX_SAFE_INTEGER),
    maxKeys: integerOption(args, 'max-keys', DEFAULT_MAX_KEYS, 100, 1_000_000),
    output: flagOption(args, 'json') ? 'json' : flagOption(args, 'markdown') ? 'markdown' : 'text',
    write: stringOption(args, 'write'),
    showKeys: flagOption(args, 'show-keys'),
    tenantHeader,
  };
}

/** One limit in the report. */
export interface SuggestLimit {
  readonly name: string;
  readonly purpose: string;
  readonly algorithm: string;
  readonly key: string;
  readonly windowMs: number;
  readonly current: { readonly limit: number; readonly burst: number | null };
  readonly keys: { readonly seen: number; readonly measured: number; readonly sampleRate: number };
  /** Per-key peak in any window, and in one sub-window (W / 16). */
  readonly peak: Distribution;
  readonly peakShort: Distribution;
  /** null: no keyed traffic, or a concurrency limit (a log has no durations). */
  readonly suggested: { readonly limit: number; readonly burst: number | null } | null;
  readonly currentWouldBlock: {
    readonly keys: number;
    /** Requests the current N rejects, and their share of the limit's checked requests. */
    readonly requests: number;
    readonly share: number;
    readonly topKeys: ReadonlyArray<{ readonly key: string; readonly rejections: number; readonly error: number }>;
  };
  /** Abuse limits: attempts per key per day and guessing time, at the current and the suggested N. */
  readonly threat: null | {
    readonly guessSpace: number;
    readonly current: { readonly attemptsPerDay: number; readonly daysToGuessHalf: number };
    readonly suggested: { readonly attemptsPerDay: number; readonly daysToGuessHalf: number } | null;
  };
  readonly note: string | null;
}

export interface SuggestReport {
  readonly log: ReplayReport['log'];
  readonly config: string;
  readonly percentile: number;
  readonly headroom: number;
  readonly keys: 'hashed' | 'shown';
  readonly limits: readonly SuggestLimit[];
  readonly memory: { readonly maxKeysPerLimit: number; readonly bytesPerKey: number; readonly boundBytes: number; readonly subWindows: number };
  readonly written: string | null;
  readonly run: { readonly elapsedMs: number; readonly peakRssBytes: number };
}

function limitReport(u: LimitUsage, run: ContractRun, r: SuggestRequest, show: (k: string) => string): SuggestLimit {
  const l = u.limit;
  const tally = run.tallies.get(l.name);
  const burst = l.algorithm === 'token-bucket' || l.algorithm === 'leaky-bucket' || l.algorithm === 'gcra' ? l.params.burst : null;
  const usable = u.sampledKeys > 0 && l.algorithm !== 'concurrency';
  const s = usable ? suggestion(u, r.headroom) : null;
  const checked = tally?.checked ?? 0;
  const rejected = tally?.wouldReject ?? 0;
  const now = l.purpose === 'abuse' ? threat(l, l.params.limit, burst ?? undefined, r.guessSpace) : undefined;
  const next = l.purpose === 'abuse' && s !== null ? threat(l, s.limit, s.burst, r.guessSpace) : undefined;
  return {
    name: l.name,
    purpose: l.purpose,
    algorithm: l.algorithm,
    key: l.keySpec,
    windowMs: l.params.windowMs,
    current: { limit: l.params.limit, burst },
    keys: { seen: u.keys, measured: u.sampledKeys, sampleRate: u.sampleRate },
    peak: u.peak,
    peakShort: u.peakShort,
    suggested: s === null ? null : { limit: s.limit, burst: s.burst ?? null },
    currentWouldBlock: {
      keys: u.blockedKeys,
      requests: rejected,
      share: checked === 0 ? 0 : rejected / checked,
      topKeys: (tally?.top.top(TOP) ?? []).map((k) => ({ key: show(k.key), rejections: k.count, error: k.error })),
    },
    threat:
      now === undefined
        ? null
        : {
            guessSpace: r.guessSpace,
            current: { attemptsPerDay: now.attemptsPerDay, daysToGuessHalf: now.daysToGuessHalf },
            suggested: next === undefined ? null : { attemptsPerDay: next.attemptsPerDay, daysToGuessHalf: next.daysToGuessHalf },
          },
    note:
      l.algorithm === 'concurrency'
        ? 'a concurrency limit: a log has no request durations, so no N is suggested'
        : u.sampledKeys === 0
          ? 'no keyed traffic in the log (no route with this limit was hit, or its key is body.*): no N is suggested'
          : null,
  };
}

function days(d: number): string {
  if (d < 1) return `${(d * 24).toFixed(1)} hours`;
  if (d < 365) return `${d.toFixed(1)} days`;
  return `${(d / 365).toFixed(1)} years`;
}

function dist(d: Distribution): string {
  return `p50 ${d.p50} · p90 ${d.p90} · p99 ${d.p99} · p99.9 ${d.p999} · max ${d.max}`;
}

function pct(x: number): string {
  return `${(x * 100).toFixed(x < 0.01 ? 3 : 1)}%`;
}

function renderText(r: SuggestReport): string {
  const out = [`ratecontract suggest: ${r.config} over ${r.log.file} (${thousands(r.log.records)} requests), p${r.percentile} x ${r.headroom}`, ''];
  for (const l of r.limits) {
    const per = formatDuration(l.windowMs);
    out.push(`${l.name} (${l.purpose}, ${l.algorithm}, key ${l.key}): now ${l.current.limit} per ${per}${l.current.burst !== null ? `, burst ${l.current.burst}` : ''}`);
    out.push(`  keys: ${thousands(l.keys.seen)}${l.keys.sampleRate < 1 ? ` (estimated from ${thousands(l.keys.measured)} sampled, 1 in ${Math.round(1 / l.keys.sampleRate)})` : ''}`);
    out.push(`  peak per key in any ${per}: ${dist(l.peak)}`);
    if (l.current.burst !== null) out.push(`  peak per key in ${formatDuration(Math.max(1, Math.round(l.windowMs / SUB_WINDOWS)))}: ${dist(l.peakShort)}`);
    if (l.suggested !== null) out.push(`  suggested: ${l.suggested.limit} per ${per}${l.suggested.burst !== null ? `, burst ${l.suggested.burst}` : ''} (p${r.percentile} x ${r.headroom})`);
    const b = l.currentWouldBlock;
    out.push(`  the current N would block: ${plural(b.keys, 'key', { format: thousands })}, ${thousands(b.requests)} requests (${pct(b.share)} of its traffic)`);
    for (const k of b.topKeys) out.push(`    ${k.key}  ${thousands(k.rejections)}${k.error > 0 ? ` (±${k.error})` : ''}`);
    if (l.threat !== null) {
      const t = l.threat;
      out.push(`  threat: at N = ${l.current.limit}, ${thousands(t.current.attemptsPerDay)} attempts per key per day: half of ${thousands(t.guessSpace)} guesses in ${days(t.current.daysToGuessHalf)}`);
      if (t.suggested !== null && l.suggested !== null) {
        out.push(`          at N = ${l.suggested.limit}, ${thousands(t.suggested.attemptsPerDay)} attempts per key per day: half of ${thousands(t.guessSpace)} guesses in ${days(t.suggested.daysToGuessHalf)}`);
      }
    }
    if (l.note !== null) out.push(`  note: ${l.note}`);
    out.push('');
  }
  out.push(`memory: at most ${thousands(r.memory.maxKeysPerLimit)} keys per limit measured (then sampled), ${r.memory.bytesPerKey} bytes each: at most ${(r.memory.boundBytes / 1048576).toFixed(1)} MiB`);
  if (r.written !== null) out.push(`wrote ${r.written}: diff it with  ratecontract audit --config ${r.written} --against ${r.config}`);
  return out.join('\n');
}

function renderMarkdown(r: SuggestReport): string {
  const out = [`## ratecontract suggest: \`${r.config}\` over \`${r.log.file}\``, '', `${thousands(r.log.records)} requests; suggested N = p${r.percentile} of the per-key peak x ${r.headroom}.`, ''];
  out.push('| limit | purpose | key | window | N now | per-key peak p50 / p90 / p99 / p99.9 / max | suggested N | burst now → suggested | keys the current N blocks | their share of traffic |');
  out.push('| --- | --- | --- | --- | ---: | --- | ---: | --- | ---: | ---: |');
  for (const l of r.limits) {
    const p = l.peak;
    const burst = l.current.burst === null ? '' : `${l.current.burst} → ${l.suggested?.burst ?? '—'}`;
    out.push(`| ${l.name} | ${l.purpose} | ${l.key} | ${formatDuration(l.windowMs)} | ${l.current.limit} | ${p.p50} / ${p.p90} / ${p.p99} / ${p.p999} / ${p.max} | ${l.suggested?.limit ?? '—'} | ${burst} | ${thousands(l.currentWouldBlock.keys)} | ${pct(l.currentWouldBlock.share)} |`);
  }
  const abuse = r.limits.filter((l) => l.threat !== null);
  if (abuse.length > 0) {
    out.push('', '| abuse limit | attempts per key per day now | half the guess space in | at the suggested N | half the guess space in |', '| --- | ---: | --- | ---: | --- |');
    for (const l of abuse) {
      const t = l.threat as NonNullable<SuggestLimit['threat']>;
      out.push(`| ${l.name} | ${thousands(t.current.attemptsPerDay)} | ${days(t.current.daysToGuessHalf)} | ${t.suggested === null ? '—' : thousands(t.suggested.attemptsPerDay)} | ${t.suggested === null ? '—' : days(t.suggested.daysToGuessHalf)} |`);
    }
  }
  for (const l of r.limits) {
    if (l.currentWouldBlock.topKeys.length === 0) continue;
    out.push('', `### ${l.name}: top keys the current N rejects`, '', '| key | rejections |', '| --- | ---: |');
    for (const k of l.currentWouldBlock.topKeys) out.push(`| \`${k.key}\` | ${thousands(k.rejections)}${k.error > 0 ? ` (±${k.error})` : ''} |`);
  }
  return out.join('\n');
}

/** The contract file with each limit's suggested `limit` (and `burst`), comments and layout kept (YAML); JSON stays JSON. */
export function writeSuggested(file: string, limits: readonly SuggestLimit[]): string {
  const text = readFileSync(file, 'utf8');
  const doc = parseDocument(text);
  const list = doc.get('limits') as { items?: unknown[] } | undefined;
  const count = Array.isArray(list?.items) ? list.items.length : 0;
  for (let i = 0; i < count; i++) {
    const name = doc.getIn(['limits', i, 'name']);
    const l = limits.find((x) => x.name === name);
    if (l?.suggested == null) continue;
    doc.setIn(['limits', i, 'limit'], l.suggested.limit);
    if (l.suggested.burst !== null) doc.setIn(['limits', i, 'burst'], l.suggested.burst);
  }
  return /\.json$/i.test(file) ? JSON.stringify(doc.toJS(), null, 2) + '\n' : doc.toString({ lineWidth: 0, flowCollectionPadding: false });
}

function fail(io: CommandIo, message: string): number {
  io.stderr.write(`ratecontract suggest: ${message}\n`);
  return 2;
}

async function runSuggest(args: ParsedArgs, io: CommandIo): Promise<number> {
  const request = suggestRequest(args);
  const started = process.hrtime.bigint();
  let config: RateContractConfig;
  try {
    config = await loadContract(request.config);
  } catch (error) {
    if (error instanceof ConfigError) return fail(io, error.message);
    throw error;
  }
  if (request.write !== undefined && request.config === undefined) return fail(io, '--write needs --config: the built-in demo contract has no file to rewrite');
  const tracker = new UsageTracker(config.compiled, request.maxKeys);
  const run = await ContractRun.start(config, { capacity: KEY_CAPACITY, keepUnrouted: 0, tenantHeader: request.tenantHeader, observe: tracker.observe });
  const read = readLog(request.log, { format: request.format, keepMalformed: 10, stdin: io.stdin });
  let lines = 0;
  try {
    for await (const record of read.records) {
      const v = run.replay(record);
      if (v instanceof Promise) await v;
      if (++lines % PROGRESS_LINES === 0) {
        const s = Number(process.hrtime.bigint() - started) / 1e9;
        io.stderr.write(`ratecontract suggest: ${thousands(lines)} requests replayed (${thousands(Math.round(lines / s))}/s), ${thousands(tracker.keysHeld)} keys measured\n`);
      }
    }
  } catch (error) {
    if (error instanceof LogInputError) return fail(io, error.message);
    throw error;
  } finally {
    await run.close();
  }
  const stats = read.stats;
  const logName = request.log === '-' ? 'stdin' : request.log;
  if (stats.records === 0) return fail(io, `log ${logName} holds no request${stats.malformed > 0 ? ` (${plural(stats.malformed, 'malformed line', { format: thousands })})` : ': it is empty'}`);
  const show = keyFormatter(request.showKeys);
  const limits = tracker.usage(request.percentile).map((u) => limitReport(u, run, request, show));
  let written: string | null = null;
  if (request.write !== undefined && request.config !== undefined) {
    writeFileSync(request.write, writeSuggested(request.config, limits));
    written = request.write;
  }
  const report: SuggestReport = {
    log: logReport(logName, stats),
    config: config.file,
    percentile: request.percentile,
    headroom: request.headroom,
    keys: request.showKeys ? 'shown' : 'hashed',
    limits,
    memory: { maxKeysPerLimit: request.maxKeys, bytesPerKey: SUGGEST_BYTES_PER_KEY, boundBytes: request.maxKeys * SUGGEST_BYTES_PER_KEY * config.compiled.length, subWindows: SUB_WINDOWS },
    written,
    run: { elapsedMs: Math.round(Number(process.hrtime.bigint() - started) / 1e6), peakRssBytes: process.resourceUsage().maxRSS * 1024 },
  };
  io.stdout.write((request.output === 'json' ? JSON.stringify(report) : request.output === 'markdown' ? renderMarkdown(report) : renderText(report)) + '\n');
  return 0;
}
