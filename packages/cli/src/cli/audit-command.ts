import { auditContract, type AuditReport, type AuditRow, type Finding } from '../contract/audit.js';
import { diffContracts, type ContractChange } from '../contract/audit-diff.js';
import type { RateContractConfig } from 'ratecontract/config';
import { ConfigError } from 'ratecontract';
import { formatDuration } from 'ratecontract';
import { plural } from '../contract/plural.js';
import { didYouMean } from 'ratecontract/internal';
import { ArgumentError, EXIT_USAGE, flagOption, stringOption, type Command, type CommandIo, type ParsedArgs } from './args.js';
import { contractOption, loadContract } from './check.js';
import { loadRlsConfig } from '../rls/config.js';
import { auditRls, type RlsAudit } from '../rls/rls-audit.js';

/** What `--fail-on` can make exit 1, besides the error findings that always do. */
export const FAIL_ON = ['error', 'warn', 'weaken', 'change'] as const;
export type FailOn = (typeof FAIL_ON)[number];

/** The `audit` command: the contract table and findings of a contract (`audit FILE`), or of an rls config (`audit --rls FILE|DIR`). */
export const auditCommand: Command = {
  name: 'audit',
  summary: 'the contract table of a config and its findings; exit 1 on an error finding, 2 on an unreadable config',
  fileOption: 'config',
  options: {
    config: { type: 'string', value: 'FILE', description: 'the contract (YAML or JSON), or with --rls an rls config file or directory', default: 'the built-in demo contract' },
    against: { type: 'string', value: 'OLD_FILE', description: 'also list what changed since OLD_FILE, each change flagged when it weakens the contract' },
    json: { type: 'boolean', description: 'print the report as JSON' },
    markdown: { type: 'boolean', description: 'print the report as Markdown (for a pull request comment)' },
    rls: { type: 'boolean', description: 'audit a rate limit service config (the files of ratecontract rls) instead' },
    'fail-on': { type: 'string', value: 'LIST', description: 'what else exits 1, comma-separated: warn, weaken, change (the last two need --against)', default: 'error' },
  },
  details: [
    'Prints the contract table (one row per limit: purpose, key, algorithm and its burst bound, status,',
    'fail mode in numbers, the most one key gets per day, routes, store, shadow, reason) and the',
    'findings, each with a stable code and a severity. With --against, also what changed since',
    'OLD_FILE. With --rls, every rule of an rls config with its fail mode, and the findings (a rule',
    'without purpose gets the drop-in default, shedding, and a finding that says so).',
    '',
    '--fail-on: an error finding always exits 1 (error); warn adds a warning finding; weaken a change',
    'that weakens the contract; change any change at all. A CI gate on a pull request:',
    '--against the base branch\'s file with --fail-on weaken.',
    '',
    'Exit codes: 0 no error finding and no --fail-on condition met; 1 an error finding or a --fail-on',
    'condition met (one line on stderr says which); 2 a config that cannot be read or is invalid, or',
    'bad usage.',
    '',
    'Examples:',
    '  ratecontract audit ratecontract.yaml',
    '  ratecontract audit new.yaml --against old.yaml --fail-on weaken --markdown',
    '  ratecontract audit --rls ./config',
  ].join('\n'),
  run: runAudit,
};

export interface AuditRequest {
  readonly config: string | undefined;
  readonly against: string | undefined;
  readonly format: 'text' | 'json' | 'markdown';
  readonly rls: boolean;
  readonly failOn: ReadonlySet<FailOn>;
}

function failOnOption(args: ParsedArgs): Set<FailOn> {
  const raw = stringOption(args, 'fail-on') ?? 'error';
  const list = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (list.length === 0) throw new ArgumentError(`--fail-on needs one or more of ${FAIL_ON.join(', ')}`);
  for (const c of list) {
    if (!(FAIL_ON as readonly string[]).includes(c)) {
      throw new ArgumentError(`--fail-on: unknown condition ${JSON.stringify(c)}${didYouMean(c, FAIL_ON)} (one or more of ${FAIL_ON.join(', ')})`);
    }
  }
  return new Set(['error', ...list] as FailOn[]);
}

/** Checks the parsed options of `audit`; every mistake is an `ArgumentError` naming its option. */
export function auditRequest(args: ParsedArgs): AuditRequest {
  const config = contractOption(args);
  const against = stringOption(args, 'against');
  if (against === '') throw new ArgumentError('--against needs a file name');
  const json = flagOption(args, 'json');
  const markdown = flagOption(args, 'markdown');
  if (json && markdown) throw new ArgumentError('--markdown: choose one of --json and --markdown');
  const rls = flagOption(args, 'rls');
  const failOn = failOnOption(args);
  for (const c of ['weaken', 'change'] as const) {
    if (failOn.has(c) && against === undefined) throw new ArgumentError(`--fail-on ${c} needs --against OLD_FILE`);
  }
  if (rls && config === undefined) throw new ArgumentError('--rls needs a config: audit --rls FILE|DIR');
  if (rls && against !== undefined) throw new ArgumentError('--rls does not take --against');
  if (rls && markdown) throw new ArgumentError('--rls prints text or --json');
  return { config, against, format: json ? 'json' : markdown ? 'markdown' : 'text', rls, failOn };
}

function renderRls(audit: RlsAudit): string {
  const lines: string[] = [`rate limit service config: ${plural(audit.files.length, 'file')}, ${plural(audit.rules.length, 'rule')}`, ''];
  for (const r of audit.rules) {
    lines.push(`${r.path}  (${r.file})`);
    lines.push(`  bound      ${r.bound}${r.algorithm === undefined ? '' : ` (${r.algorithm}${r.burst === undefined ? '' : `, burst ${r.burst}`})`}`);
    lines.push(`  purpose    ${r.purpose}`);
    if (r.onError !== undefined) lines.push(`  fail mode  ${r.onError}`);
    lines.push(`  store      ${r.store}`, `  shadow     ${yesNo(r.shadow)}`, `  reason     ${r.reason ?? '(none)'}`, '');
  }
  const counts = (['error', 'warn', 'info'] as const).map((s) => `${audit.findings.filter((f) => f.severity === s).length} ${s}`).join(', ');
  lines.push(`findings: ${counts}`);
  for (const f of audit.findings) lines.push(`${f.severity.padEnd(5)} ${f.code}  ${f.subject}: ${f.message}`);
  return lines.join('\n') + '\n';
}

function yesNo(b: boolean): string {
  return b ? 'yes' : 'no';
}

function perDay(r: AuditRow): string {
  if (r.maxPerDay === null) return `n/a (at most ${r.limit} in flight)`;
  const unit = r.cost === 1 ? '' : ` cost units (${plural(Math.floor(r.maxPerDay / r.cost), 'request')} of cost ${r.cost})`;
  return r.maxPerDay === r.sustainedPerDay ? `${r.maxPerDay}${unit} per day` : `at most ${r.maxPerDay}${unit} in any 24 h (the sustained rate alone: ${r.sustainedPerDay})`;
}

function algorithmText(r: AuditRow): string {
  const text = r.algorithm === 'concurrency' ? `${r.algorithm}: ${r.bound}` : `${r.algorithm}, ${r.limit} per ${formatDuration(r.windowMs)}: ${r.bound}`;
  return r.tier === null ? text : `${text}; ${r.tier}`;
}

function keyText(r: AuditRow): string {
  return `${r.key}${r.clientSupplied ? ' (client-supplied)' : ''}`;
}

function bytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(1)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  return `${(n / 2 ** 10).toFixed(1)} KiB`;
}

function percent(x: number): string {
  return x >= 0.1 ? `${(x * 100).toFixed(0)}%` : x >= 0.001 ? `${(x * 100).toFixed(2)}%` : `${(x * 100).toPrecision(2)}%`;
}

/** `keySlots` in words: the key and memory bound, and the chance a live key shares its slot. */
function keyspaceText(r: AuditRow): string {
  const k = r.keyspace;
  if (k === null) return r.storeType === 'redis' ? 'unbounded (one entry per key; set keySlots to bound it)' : 'one entry per key (memory store: bounded by maxKeys)';
  const rates = k.collisions.map((c) => `${percent(c.rate)} at ${plural(c.liveKeys, 'live key')}`).join(', ');
  return `at most ${plural(k.maxKeys, 'key')} x ${k.bytesPerKey} B = ${bytes(k.maxBytes)}${r.storeType === 'redis' ? ' of Redis memory' : ''}; a live key shares its slot (a stricter, shared budget): ${rates}${k.keyed ? '' : '; slot hash unkeyed (set the store\'s keySecretEnv to keep an attacker from aiming keys at a victim\'s slot)'}`;
}

function finding(f: Finding): string {
  return `${f.severity.padEnd(5)} ${f.code}  ${f.subject}: ${f.message}`;
}

/** `'2 weaken'`, `'1 weakens'`: how many of `changes` weaken the contract. */
function weakening(changes: readonly ContractChange[]): string {
  return plural(changes.filter((c) => c.weakens).length, 'weakens', { many: 'weaken' });
}

function change(c: ContractChange): string {
  return `${c.weakens ? 'WEAKENS ' : '        '}${c.message}`;
}

export function renderText(report: AuditReport, changes: readonly ContractChange[] | undefined): string {
  const lines: string[] = [`contract ${report.file}: ${plural(report.rows.length, 'limit')}, replicas ${String(report.replicas)}`, ''];
  for (const r of report.rows) {
    lines.push(`${r.name}  (${r.purpose}${r.shadow ? ', shadow' : ''})`);
    const field = (k: string, v: string): void => {
      lines.push(`  ${k.padEnd(10)} ${v}`);
    };
    field('key', keyText(r));
    field('algorithm', algorithmText(r));
    field('status', String(r.status));
    field('fail mode', r.failMode);
    field('per day', perDay(r));
    field('routes', r.routes.join(', ') || '(none)');
    field('store', `${r.store} (${r.failureDomain})`);
    field('keyspace', keyspaceText(r));
    field('shadow', yesNo(r.shadow));
    field('reason', r.reason ?? '(none)');
    lines.push('');
  }
  const counts = (['error', 'warn', 'info'] as const).map((s) => `${report.findings.filter((f) => f.severity === s).length} ${s}`).join(', ');
  lines.push(`findings: ${counts}`);
  for (const f of report.findings) lines.push(finding(f));
  if (changes !== undefined) {
    lines.push('', `changes: ${changes.length} (${weakening(changes)} the contract)`);
    for (const c of changes) lines.push(change(c));
  }
  return lines.join('\n') + '\n';
}

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function renderMarkdown(report: AuditReport, changes: readonly ContractChange[] | undefined): string {
  const lines = [
    `### Rate-limit contract: \`${report.file}\``,
    '',
    `replicas: ${String(report.replicas)}`,
    '',
    '| limit | purpose | key | algorithm and bound | status | fail mode | per day | routes | store | keyspace | shadow | reason |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of report.rows) {
    lines.push(
      `| ${[
        `\`${r.name}\``,
        r.purpose,
        `\`${r.key}\`${r.clientSupplied ? ' (client-supplied)' : ''}`,
        algorithmText(r),
        String(r.status),
        r.failMode,
        perDay(r),
        r.routes.map((x) => `\`${x}\``).join(', ') || '(none)',
        `${r.store} (${r.failureDomain})`,
        keyspaceText(r),
        yesNo(r.shadow),
        r.reason ?? '**(none)**',
      ]
        .map(cell)
        .join(' | ')} |`,
    );
  }
  lines.push('', `#### Findings (${report.findings.length})`, '');
  if (report.findings.length === 0) lines.push('None.');
  for (const f of report.findings) lines.push(`- **${f.severity}** \`${f.code}\` ${cell(f.subject)}: ${cell(f.message)}`);
  if (changes !== undefined) {
    lines.push('', `#### Changes (${changes.length}, ${weakening(changes)} the contract)`, '');
    if (changes.length === 0) lines.push('None.');
    for (const c of changes) lines.push(`- ${c.weakens ? '**weakens** ' : ''}${cell(c.message)}`);
  }
  return lines.join('\n') + '\n';
}

function chains(c: RateContractConfig): Map<string, readonly string[]> {
  return new Map(c.routes.map((r) => [r.match, r.limits]));
}

/** The `--fail-on` conditions beyond error findings that a report meets: one line each, for stderr. */
function failures(failOn: ReadonlySet<FailOn>, findings: readonly { severity: string }[], changes: readonly ContractChange[] | undefined): string[] {
  const out: string[] = [];
  const warns = findings.filter((f) => f.severity === 'warn').length;
  if (failOn.has('warn') && warns > 0) out.push(`${plural(warns, 'warning finding')} (--fail-on warn)`);
  const weak = changes?.filter((c) => c.weakens).length ?? 0;
  if (failOn.has('weaken') && changes !== undefined && weak > 0) {
    out.push(`${weak} of ${plural(changes.length, 'change')} ${plural(weak, 'weakens', { many: 'weaken', word: true })} the contract (--fail-on weaken)`);
  }
  if (failOn.has('change') && changes !== undefined && changes.length > 0) out.push(`${plural(changes.length, 'change')} since the old contract (--fail-on change)`);
  return out;
}

/** Exit 1 on an error finding or a met `--fail-on` condition (each named on stderr), else 0. */
function verdict(io: CommandIo, failOn: ReadonlySet<FailOn>, findings: readonly { severity: string }[], changes?: readonly ContractChange[]): number {
  const met = failures(failOn, findings, changes);
  for (const line of met) io.stderr.write(`ratecontract audit: ${line}\n`);
  return findings.some((f) => f.severity === 'error') || met.length > 0 ? 1 : 0;
}

async function runAudit(parsed: ParsedArgs, io: CommandIo): Promise<number> {
  const args = auditRequest(parsed);
  const out = (s: string): void => void io.stdout.write(s);
  const unreadable = (error: unknown): number => {
    if (!(error instanceof ConfigError)) throw error;
    io.stderr.write(error.message + '\n');
    return EXIT_USAGE;
  };
  if (args.rls) {
    let audit: RlsAudit;
    try {
      audit = auditRls(await loadRlsConfig(args.config ?? ''));
    } catch (error) {
      return unreadable(error);
    }
    out(args.format === 'json' ? JSON.stringify(audit, null, 2) + '\n' : renderRls(audit));
    return verdict(io, args.failOn, audit.findings);
  }
  let config: RateContractConfig;
  let old: RateContractConfig | undefined;
  try {
    config = await loadContract(args.config);
    old = args.against === undefined ? undefined : await loadContract(args.against);
  } catch (error) {
    return unreadable(error);
  }
  const report = auditContract(config);
  const changes = old === undefined ? undefined : diffContracts(auditContract(old), report, chains(old), chains(config));
  if (args.format === 'json') out(JSON.stringify({ ...report, ...(changes !== undefined && { against: old?.file, changes }) }, null, 2) + '\n');
  else if (args.format === 'markdown') out(renderMarkdown(report, changes));
  else out(renderText(report, changes));
  return verdict(io, args.failOn, report.findings, changes);
}
