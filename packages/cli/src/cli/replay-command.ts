import { ConfigError } from 'ratecontract';
import type { RateContractConfig } from 'ratecontract/config';
import { plural } from '../contract/plural.js';
import { ArgumentError, flagOption, integerOption, stringOption, type Command, type CommandIo, type ParsedArgs } from './args.js';
import { loadContract } from './check.js';
import { LOG_COMMAND_OPTIONS, SHOW_KEYS_OPTION, TENANT_HEADER_OPTION, thousands } from './log-command-options.js';
import { LogInputError, readLog, type LogFormat } from './logs.js';
import { ContractDiff, ContractRun, type Verdict } from './replay.js';
import { contractReport, diffReport, keyFormatter, logReport, renderReplay, type ReplayReport } from './replay-report.js';

/**
 * Heavy-hitter counters per limit (and per direction of the difference):
 * counts are exact while a limit rejects at most this many distinct keys, and
 * beyond that any key with more than 1/1000 of the limit's rejections is listed.
 */
export const KEY_CAPACITY = 1000;
/** Unrouted lines that keep their number, method and path. */
const KEEP_UNROUTED = 10;
/** Malformed lines that keep their number and reason. */
const KEEP_MALFORMED = 100;

const FORMATS: readonly LogFormat[] = ['auto', 'combined', 'json'];


/** The `replay` command: its options and usage, declared once. */
export const replayCommand: Command = {
  name: 'replay',
  summary: 'replay an access log through a contract on a virtual clock: what each limit would reject, and for which keys',
  fileOption: 'config',
  options: {
    ...LOG_COMMAND_OPTIONS,
    against: { type: 'string', value: 'OLD_FILE', description: 'also replay OLD_FILE over the same lines and report what the new contract rejects that it did not' },
    json: { type: 'boolean', description: 'print the report as one JSON document instead of the table' },
    'show-keys': SHOW_KEYS_OPTION,
    top: { type: 'string', value: 'N', description: 'keys listed per limit, 1 to 100', default: '10' },
    'tenant-header': TENANT_HEADER_OPTION,
  },
  details: [
    'Every line runs through the routes and chains of the contract, in time order, on a virtual clock',
    "set to the line's time, with every store (Redis too) replaced by a memory store: nothing is",
    "connected. A line's context is what the HTTP layer would build: ip (grouped by http.ipv4Prefix and",
    'ipv6Prefix), principal (the logged user, else the identity header), method, path, query, and a',
    "JSON line's tenant as the tenant header. Logs have no bodies: body.* keys decide nothing.",
    '',
    'Malformed lines are counted with their line numbers and never stop the run. Exit 0 with the',
    'report; 2 for bad usage, a config that cannot be read or is invalid, or a log that cannot be read',
    'or holds no request.',
    '',
    'Examples:',
    '  ratecontract replay ratecontract.yaml --log /var/log/nginx/access.log.1.gz',
    '  zcat access.log.*.gz | ratecontract replay --config new.yaml --against old.yaml --log - --json',
  ].join('\n'),
  run: runReplay,
};

/** What the options of one run resolve to. */
export interface ReplayRequest {
  readonly config: string | undefined;
  readonly log: string;
  readonly format: LogFormat;
  readonly against: string | undefined;
  readonly json: boolean;
  readonly showKeys: boolean;
  readonly top: number;
  readonly tenantHeader: string | undefined;
}

/** Checks the parsed options of `replay`; every bad value is an `ArgumentError` naming its option. */
export function replayRequest(args: ParsedArgs): ReplayRequest {
  const log = stringOption(args, 'log');
  if (log === undefined) throw new ArgumentError('--log is required (--log FILE, or --log - for stdin)');
  for (const name of ['log', 'config', 'against']) {
    if (stringOption(args, name) === '') throw new ArgumentError(`--${name} needs a file name`);
  }
  const format = stringOption(args, 'format') ?? 'auto';
  if (!(FORMATS as readonly string[]).includes(format)) throw new ArgumentError(`--format must be one of ${FORMATS.join(', ')}, got ${JSON.stringify(format)}`);
  const tenantHeader = stringOption(args, 'tenant-header');
  if (tenantHeader !== undefined && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(tenantHeader)) {
    throw new ArgumentError(`--tenant-header must be a header name, got ${JSON.stringify(tenantHeader)}`);
  }
  return {
    config: stringOption(args, 'config'),
    log,
    format: format as LogFormat,
    against: stringOption(args, 'against'),
    json: flagOption(args, 'json'),
    showKeys: flagOption(args, 'show-keys'),
    top: integerOption(args, 'top', 10, 1, 100),
    tenantHeader,
  };
}

/** What the report says about how the contract met the log. */
function notes(config: RateContractConfig, run: ContractRun, late: number, prefix: string): string[] {
  const out: string[] = [];
  for (const [name, s] of Object.entries(config.stores)) {
    if (s.type === 'redis') out.push(`${prefix}store ${name} is Redis; replayed on a memory store`);
  }
  for (const t of run.tallies.values()) {
    if (t.keySpec.startsWith('body.') && t.unkeyed > 0) out.push(`${prefix}${t.name} is keyed on ${t.keySpec}: a log has no request bodies, so it decided none of its ${plural(t.unkeyed, 'request', { format: thousands })}`);
    if (t.algorithm === 'concurrency' && t.checked > 0) out.push(`${prefix}${t.name} is a concurrency limit: a log has no request durations, so each lease ends with its check`);
  }
  if (late > 0 && prefix === '') out.push(`${plural(late, 'line was', { many: 'lines were', format: thousands })} more than 5 s out of order and were replayed at the time of the line before them`);
  return out;
}

function fail(io: CommandIo, message: string): number {
  io.stderr.write(`ratecontract replay: ${message}\n`);
  return 2;
}

async function runReplay(args: ParsedArgs, io: CommandIo): Promise<number> {
  const request = replayRequest(args);
  const started = process.hrtime.bigint();
  let config: RateContractConfig;
  let oldConfig: RateContractConfig | undefined;
  try {
    config = await loadContract(request.config);
    if (request.against !== undefined) oldConfig = await loadContract(request.against);
  } catch (error) {
    if (error instanceof ConfigError) return fail(io, error.message);
    throw error;
  }
  const capacity = KEY_CAPACITY;
  const runOptions = { capacity, keepUnrouted: KEEP_UNROUTED, tenantHeader: request.tenantHeader };
  const run = await ContractRun.start(config, runOptions);
  const old = oldConfig === undefined ? undefined : await ContractRun.start(oldConfig, runOptions);
  const diff = old === undefined ? undefined : new ContractDiff(capacity);
  const read = readLog(request.log, { format: request.format, keepMalformed: KEEP_MALFORMED, stdin: io.stdin });
  try {
    for await (const record of read.records) {
      let verdict = run.replay(record);
      if (verdict instanceof Promise) verdict = await verdict;
      if (old !== undefined) {
        let was: Verdict | Promise<Verdict> = old.replay(record);
        if (was instanceof Promise) was = await was;
        (diff as ContractDiff).add(verdict, was);
      }
    }
  } catch (error) {
    if (error instanceof LogInputError) return fail(io, error.message);
    throw error;
  } finally {
    await run.close();
    await old?.close();
  }
  const stats = read.stats;
  const logName = request.log === '-' ? 'stdin' : request.log;
  if (stats.records === 0) {
    if (stats.malformed === 0) return fail(io, `log ${logName} holds no request: it is empty`);
    const first = stats.malformedLines[0];
    return fail(io, 
      `log ${logName} holds no request in ${stats.format ?? request.format} format: ${plural(stats.malformed, 'malformed line', { format: thousands })}` +
        (first !== undefined ? ` (line ${first.line}: ${first.reason})` : ''),
    );
  }
  const show = keyFormatter(request.showKeys);
  const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
  const report: ReplayReport = {
    log: logReport(logName, stats),
    keys: request.showKeys ? 'shown' : 'hashed',
    keyCapacity: capacity,
    contract: contractReport(run, request.top, show),
    against: old === undefined ? null : diffReport(diff as ContractDiff, old, request.top, show),
    notes: [...notes(config, run, stats.late, ''), ...(old === undefined || oldConfig === undefined ? [] : notes(oldConfig, old, 0, `${oldConfig.file}: `))],
    run: {
      elapsedMs: Math.round(elapsedMs),
      linesPerSecond: elapsedMs > 0 ? Math.round((stats.lines / elapsedMs) * 1000) : 0,
      // maxRSS is in KiB.
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
    },
  };
  io.stdout.write((request.json ? JSON.stringify(report) : renderReplay(report)) + '\n');
  return 0;
}
