import { auditContract, type AuditReport, type AuditRow, type Finding } from '../config/audit.js';
import { diffContracts, type ContractChange } from '../config/audit-diff.js';
import type { RateContractConfig } from '../config/types.js';
import { ConfigError } from '../core/errors.js';
import { formatDuration } from '../core/duration.js';
import { loadContract, UsageFailure } from './check.js';

export const AUDIT_USAGE = `usage: ratecontract audit [--config FILE] [--json | --markdown] [--against OLD_FILE]

Prints the contract table (one row per limit: purpose, key, algorithm and its
burst bound, status, fail mode in numbers, the most one key gets per day,
routes, store, shadow, reason) and the findings, each with a stable code and
a severity. With --against, also what changed since OLD_FILE, each change
flagged when it weakens the contract. Without --config, audits the built-in
demo contract.

exit codes: 0 no error finding; 1 at least one error finding; 2 a config
that cannot be read or is invalid, or bad usage.`;

export interface AuditArgs {
  readonly config: string | undefined;
  readonly against: string | undefined;
  readonly format: 'text' | 'json' | 'markdown';
  readonly help: boolean;
}

export function parseAuditArgs(argv: readonly string[]): AuditArgs {
  let config: string | undefined;
  let against: string | undefined;
  let format: AuditArgs['format'] = 'text';
  let help = false;
  const value = (flag: string, v: string | undefined): string => {
    if (v === undefined || v.startsWith('--')) throw new UsageFailure(`${flag} needs a file name`);
    return v;
  };
  const setFormat = (f: AuditArgs['format'], flag: string): void => {
    if (format !== 'text' && format !== f) throw new UsageFailure(`${flag}: choose one of --json and --markdown`);
    format = f;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--help' || arg === '-h') help = true;
    else if (arg === '--config' || arg === '-c') config = value(arg, argv[++i]);
    else if (arg.startsWith('--config=')) config = arg.slice('--config='.length);
    else if (arg === '--against') against = value(arg, argv[++i]);
    else if (arg.startsWith('--against=')) against = arg.slice('--against='.length);
    else if (arg === '--json') setFormat('json', arg);
    else if (arg === '--markdown') setFormat('markdown', arg);
    else throw new UsageFailure(`unknown option ${arg}`);
  }
  return { config, against, format, help };
}

function yesNo(b: boolean): string {
  return b ? 'yes' : 'no';
}

function perDay(r: AuditRow): string {
  if (r.maxPerDay === null) return `n/a (at most ${r.limit} in flight)`;
  const unit = r.cost === 1 ? '' : ` cost units (${Math.floor(r.maxPerDay / r.cost)} requests of cost ${r.cost})`;
  return r.maxPerDay === r.sustainedPerDay ? `${r.maxPerDay}${unit} per day` : `at most ${r.maxPerDay}${unit} in any 24 h (the sustained rate alone: ${r.sustainedPerDay})`;
}

function algorithmText(r: AuditRow): string {
  return r.algorithm === 'concurrency' ? `${r.algorithm}: ${r.bound}` : `${r.algorithm}, ${r.limit} per ${formatDuration(r.windowMs)}: ${r.bound}`;
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
  const rates = k.collisions.map((c) => `${percent(c.rate)} at ${c.liveKeys} live keys`).join(', ');
  return `at most ${k.maxKeys} keys x ${k.bytesPerKey} B = ${bytes(k.maxBytes)}${r.storeType === 'redis' ? ' of Redis memory' : ''}; a live key shares its slot (a stricter, shared budget): ${rates}${k.keyed ? '' : '; slot hash unkeyed (set the store\'s keySecretEnv to keep an attacker from aiming keys at a victim\'s slot)'}`;
}

function finding(f: Finding): string {
  return `${f.severity.padEnd(5)} ${f.code}  ${f.subject}: ${f.message}`;
}

function change(c: ContractChange): string {
  return `${c.weakens ? 'WEAKENS ' : '        '}${c.message}`;
}

export function renderText(report: AuditReport, changes: readonly ContractChange[] | undefined): string {
  const lines: string[] = [`contract ${report.file}: ${report.rows.length} limits, replicas ${String(report.replicas)}`, ''];
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
    lines.push('', `changes: ${changes.length} (${changes.filter((c) => c.weakens).length} weaken the contract)`);
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
    lines.push('', `#### Changes (${changes.length}, ${changes.filter((c) => c.weakens).length} weaken the contract)`, '');
    if (changes.length === 0) lines.push('None.');
    for (const c of changes) lines.push(`- ${c.weakens ? '**weakens** ' : ''}${cell(c.message)}`);
  }
  return lines.join('\n') + '\n';
}

function chains(c: RateContractConfig): Map<string, readonly string[]> {
  return new Map(c.routes.map((r) => [r.match, r.limits]));
}

/** Runs `ratecontract audit`; returns the exit code. */
export async function runAudit(argv: readonly string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  let args: AuditArgs;
  try {
    args = parseAuditArgs(argv);
  } catch (error) {
    err(`ratecontract audit: ${(error as Error).message}\n\n${AUDIT_USAGE}\n`);
    return 2;
  }
  if (args.help) {
    out(AUDIT_USAGE + '\n');
    return 0;
  }
  let config: RateContractConfig;
  let old: RateContractConfig | undefined;
  try {
    config = await loadContract(args.config);
    old = args.against === undefined ? undefined : await loadContract(args.against);
  } catch (error) {
    if (error instanceof ConfigError) {
      err(error.message + '\n');
      return 2;
    }
    throw error;
  }
  const report = auditContract(config);
  const changes = old === undefined ? undefined : diffContracts(auditContract(old), report, chains(old), chains(config));
  if (args.format === 'json') out(JSON.stringify({ ...report, ...(changes !== undefined && { against: old?.file, changes }) }, null, 2) + '\n');
  else if (args.format === 'markdown') out(renderMarkdown(report, changes));
  else out(renderText(report, changes));
  return report.findings.some((f) => f.severity === 'error') ? 1 : 0;
}
