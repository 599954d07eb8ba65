import { writeFile } from 'node:fs/promises';
import { algorithms } from 'ratecontract';
import type { AlgorithmName } from 'ratecontract';
import { formatDuration, parseDuration } from 'ratecontract';
import { plural } from '../contract/plural.js';
import { ArgumentError, flagOption, integerOption, parseCommandArgs, stringOption, type Command, type CommandIo, type ParsedArgs } from './args.js';
import { OFFERED_PER_WINDOW, PATTERNS, type PatternName } from './patterns.js';
import { alignTrace, simulate, type SimulateOptions } from './simulate.js';
import { jsonReport, renderTable, type TrafficSource } from './simulate-report.js';
import { renderSvg } from './svg-chart.js';
import { readTrace } from './trace.js';

/** The most requests a generated pattern may offer (they are held in memory). */
export const MAX_OFFERED = 10_000_000;

/** Longest window `createLimiter` accepts: 2^35 ms, about 397.7 days (docs/algorithms.md, "Quota-sized limits"). */
const MAX_WINDOW_MS = 2 ** 35;

const ALGORITHM_NAMES = Object.keys(algorithms) as AlgorithmName[];

/** The `simulate` command: its options and usage, declared once. */
export const simulateCommand: Command = {
  name: 'simulate',
  summary: 'run the algorithms on a traffic pattern or a trace, on a virtual clock, against their bounds',
  options: {
    limit: { type: 'string', value: 'N', description: 'requests per window', default: '100' },
    window: { type: 'string', value: 'W', description: "window: ms, or a duration such as '500ms', '60s', '15m'", default: '60s' },
    burst: { type: 'string', value: 'B', description: 'bucket size of token-bucket, leaky-bucket and gcra', default: 'the limit' },
    pattern: { type: 'string', value: 'NAME', description: `generated traffic: ${PATTERNS.join(', ')}`, default: 'boundary' },
    windows: { type: 'string', value: 'K', description: 'windows of generated traffic', default: '10' },
    seed: { type: 'string', value: 'S', description: 'seed of the bursty and poisson patterns, 0 to 4294967295', default: '1' },
    trace: { type: 'string', value: 'FILE', description: 'replay the arrival times of FILE (gzip or not; - for stdin) instead of a pattern' },
    hold: { type: 'string', value: 'D', description: 'how long a concurrency lease is held before release', default: '1s' },
    algorithms: { type: 'string', value: 'a,b,...', description: `algorithms to run: ${ALGORITHM_NAMES.join(', ')}`, default: 'all' },
    json: { type: 'boolean', description: 'print the numbers and time series as JSON instead of the table' },
    svg: { type: 'string', value: 'FILE', description: 'also write a chart of admitted over time per algorithm, with its bound, to FILE' },
  },
  details: [
    'Patterns, for one key: boundary puts N requests just before and N just after every other window',
    'boundary (the attack on fixed windows); steady offers 1.5 N per window evenly; bursty 2 N in 1% of',
    'each window at a seeded point; poisson a seeded Poisson process of 1.5 N per window.',
    '',
    'A trace has one time per line: a number (ms), an ISO 8601 time, a JSON object with a time field',
    '(time, timestamp, ts, @timestamp, ...), or an nginx/Apache common or combined log line. Blank and',
    '# lines are skipped; other lines that hold no time are counted and reported.',
    '',
    'Examples:',
    '  ratecontract simulate --limit 10 --window 1s --pattern poisson --seed 7',
    '  ratecontract simulate --svg boundary.svg --algorithms fixed-window,sliding-log,gcra',
    '  ratecontract simulate --trace access.log --limit 5 --window 1m --json',
  ].join('\n'),
  run: runSimulate,
};

function durationOption(args: ParsedArgs, name: string, fallback: number): number {
  const raw = stringOption(args, name);
  if (raw === undefined) return fallback;
  try {
    return parseDuration(/^\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw, `--${name}`);
  } catch (error) {
    throw new ArgumentError(error instanceof Error ? error.message : String(error));
  }
}

function algorithmsOption(args: ParsedArgs): AlgorithmName[] {
  const raw = stringOption(args, 'algorithms');
  if (raw === undefined || raw === 'all') return ALGORITHM_NAMES;
  const list = raw.split(',').map((s) => s.trim());
  for (const a of list) {
    if (!Object.hasOwn(algorithms, a)) throw new ArgumentError(`--algorithms: unknown algorithm ${a}; expected ${ALGORITHM_NAMES.join(', ')}`);
  }
  if (new Set(list).size !== list.length) throw new ArgumentError('--algorithms: an algorithm is named twice');
  return list as AlgorithmName[];
}

/** What the options of one run resolve to, before a trace is read. */
export interface SimulateRequest {
  readonly options: SimulateOptions;
  /** `--trace FILE`, to read before running. */
  readonly trace: string | undefined;
  readonly json: boolean;
  readonly svg: string | undefined;
}

/** Checks the parsed options of `simulate`; every bad value is an `ArgumentError` naming its option. */
export function simulateRequest(args: ParsedArgs): SimulateRequest {
  const limit = integerOption(args, 'limit', 100, 1, 100_000);
  const windowMs = durationOption(args, 'window', 60_000);
  const burstRaw = stringOption(args, 'burst');
  const burst = burstRaw === undefined ? undefined : integerOption(args, 'burst', 0, 1, 100_000);
  const windows = integerOption(args, 'windows', 10, 1, 100_000);
  const seed = integerOption(args, 'seed', 1, 0, 2 ** 32 - 1);
  const holdMs = durationOption(args, 'hold', 1000);
  const trace = stringOption(args, 'trace');
  const patternRaw = stringOption(args, 'pattern');
  if (trace !== undefined) {
    for (const other of ['pattern', 'windows', 'seed']) {
      if (args.values[other] !== undefined) throw new ArgumentError(`--trace and --${other} cannot be combined: a trace is the traffic`);
    }
  }
  if (patternRaw !== undefined && !(PATTERNS as readonly string[]).includes(patternRaw)) {
    throw new ArgumentError(`--pattern must be one of ${PATTERNS.join(', ')}, got ${JSON.stringify(patternRaw)}`);
  }
  const pattern = (patternRaw ?? 'boundary') as PatternName;
  if (windowMs > MAX_WINDOW_MS) {
    throw new ArgumentError(`--window: ${formatDuration(windowMs)} is longer than the longest window, 2^35 ms (about 397 days)`);
  }
  if (trace === undefined) {
    const offered = Math.ceil(OFFERED_PER_WINDOW[pattern] * limit * windows);
    if (offered > MAX_OFFERED) throw new ArgumentError(`--limit ${limit} with --windows ${windows} offers about ${plural(offered, 'request')}; at most ${MAX_OFFERED}`);
  }
  const svg = stringOption(args, 'svg');
  if (svg === '') throw new ArgumentError('--svg needs a file name');
  if (trace === '') throw new ArgumentError('--trace needs a file name');
  return {
    options: { limit, windowMs, burst, pattern: trace === undefined ? pattern : 'trace', windows, seed, holdMs, algorithms: algorithmsOption(args) },
    trace,
    json: flagOption(args, 'json'),
    svg,
  };
}

/**
 * The options of a generated run from a command line (no trace). Throws
 * `ArgumentError` for the mistakes `ratecontract simulate` exits 2 on.
 */
export function parseSimulateArgs(argv: readonly string[]): SimulateOptions {
  const parsed = parseCommandArgs(simulateCommand, argv);
  if (parsed === 'help') throw new ArgumentError('--help is not a simulation', simulateCommand);
  return simulateRequest(parsed).options;
}

async function runSimulate(args: ParsedArgs, io: CommandIo): Promise<number> {
  const request = simulateRequest(args);
  let options = request.options;
  let source: TrafficSource = { kind: 'pattern' };
  if (request.trace !== undefined) {
    const trace = await readTrace(request.trace, io.stdin);
    const aligned = alignTrace(trace.times, options.windowMs);
    options = { ...options, times: aligned.times, windows: aligned.windows };
    source = { kind: 'trace', file: request.trace, origin: aligned.origin, lines: trace.lines, malformed: trace.malformed, malformedLines: trace.malformedLines };
    if (trace.malformed > 0) {
      const more = trace.malformed > trace.malformedLines.length ? ', ...' : '';
      io.stderr.write(`ratecontract simulate: ${request.trace}: skipped ${plural(trace.malformed, 'line')} with no time (${plural(trace.malformed, 'line', { word: true })} ${trace.malformedLines.join(', ')}${more})\n`);
    }
  }
  const results = await simulate(options);
  if (request.svg !== undefined) {
    const w = formatDuration(options.windowMs);
    const traffic = source.kind === 'trace' ? `trace ${source.file}` : `pattern ${options.pattern}`;
    const xLabel =
      source.kind === 'trace'
        ? source.origin >= 1e11
          ? `time from ${new Date(source.origin).toISOString()}`
          : `time on the trace's clock, from ${source.origin} ms`
        : 'time (virtual clock)';
    const svg = renderSvg({
      title: `ratecontract simulate: ${traffic}, ${options.limit} per ${w}`,
      subtitle:
        `limit ${options.limit} per ${w}` +
        (options.burst !== undefined ? `, burst ${options.burst}` : ', burst = limit') +
        `, ${plural(results[0]?.offered ?? 0, 'request')} over ${plural(options.windows, 'window')}`,
      windowMs: options.windowMs,
      xLabel,
      results,
    });
    try {
      await writeFile(request.svg, svg);
    } catch (error) {
      throw new Error(`cannot write ${request.svg}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    io.stderr.write(`ratecontract simulate: wrote ${request.svg}\n`);
  }
  io.stdout.write(request.json ? JSON.stringify(jsonReport(options, results, source)) + '\n' : renderTable(options, results, source) + '\n');
  return 0;
}
