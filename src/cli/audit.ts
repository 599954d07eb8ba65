import { auditContract, type AuditReport, type AuditRow, type Finding } from '../config/audit.js';
import { diffContracts, type ContractChange } from '../config/audit-diff.js';
import type { RateContractConfig } from '../config/types.js';
import { ConfigError } from '../core/errors.js';
import { formatDuration } from '../core/duration.js';
import { loadContract, UsageFailure } from './check.js';
import { loadRlsConfig } from '../rls/config.js';
import { auditRls, type RlsAudit } from '../rls/audit.js';

export const AUDIT_USAGE = `usage: ratecontract audit [--config FILE] [--json | --markdown] [--against OLD_FILE]
       ratecontract audit --rls --config FILE|DIR [--json]

Prints the contract table (one row per limit: purpose, key, algorithm and its
burst bound, status, fail mode in numbers, the most one key gets per day,
routes, store, shadow, reason) and the findings, each with a stable code and
a severity. With --against, also what changed since OLD_FILE, each change
flagged when it weakens the contract. Without --config, audits the built-in
demo contract. With --rls, audits a rate limit service config (the files of
ratecontract rls): every rule with its fail mode, and the findings (a rule
without purpose is flagged).

exit codes: 0 no error finding; 1 at least one error finding; 2 a config
that cannot be read or is invalid, or bad usage.`;

export interface AuditArgs {
  readonly config: string | undefined;
  readonly against: string | undefined;
  readonly format: 'text' | 'json' | 'markdown';
  readonly help: boolean;
  readonly rls: boolean;
}

export function parseAuditArgs(argv: readonly string[]): AuditArgs {
  let config: string | undefined;
  let against: string | undefined;
  let format: AuditArgs['format'] = 'text';
  let help = false;
  let rls = false;
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
    else if (arg === '--rls') rls = true;
    else throw new UsageFailure(`unknown option ${arg}`);
  }
  if (rls && config === undefined) throw new UsageFailure('--rls needs --config FILE|DIR');
  if (rls && against !== undefined) throw new UsageFailure('--rls does not take --against');
  if (rls && (format as AuditArgs['format']) === 'markdown') throw new UsageFailure('--rls prints text or --json');
  return { config, against, format, help, rls };
}

function renderRls(audit: RlsAudit): string {
  const lines: string[] = [`rate limit service config: ${audit.files.length} file(s), ${audit.rules.length} rule(s)`, ''];
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
  const unit = r.cost === 1 ? '' : ` cost units (${Math.floor(r.maxPerDay / r.cost)} requests of cost ${r.cost})`;
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
  if (args.rls) {
    let audit: RlsAudit;
    try {
      audit = auditRls(await loadRlsConfig(args.config ?? ''));
    } catch (error) {
      if (error instanceof ConfigError) {
        err(error.message + '\n');
        return 2;
      }
      throw error;
    }
    out(args.format === 'json' ? JSON.stringify(audit, null, 2) + '\n' : renderRls(audit));
    return audit.findings.some((f) => f.severity === 'error') ? 1 : 0;
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
