import type { RlsConfig } from './config.js';
import { rulesTable, type RuleRow } from './rules-table.js';

/** One finding of `ratecontract audit --rls`: a stable code, a severity, the rule it is about. */
export interface RlsFinding {
  readonly code: 'RLS_MISSING_PURPOSE' | 'RLS_DEFAULT_FAIL_MODE' | 'RLS_BLOCKED' | 'RLS_REPLACES_UNKNOWN' | 'RLS_MISSING_REASON';
  readonly severity: 'error' | 'warn' | 'info';
  /** `file: domain.key_value...` */
  readonly subject: string;
  readonly message: string;
}

/** The audit of a rate limit service config: the rules with their fail modes made explicit, and the findings. */
export interface RlsAudit {
  readonly files: readonly string[];
  readonly rules: readonly RuleRow[];
  readonly findings: readonly RlsFinding[];
}

/** Audits an rls config: every rule without `purpose` is flagged (the fail mode then defaults to the shedding one). */
export function auditRls(config: RlsConfig): RlsAudit {
  const findings: RlsFinding[] = [];
  const names = new Set(config.rules.flatMap((r) => (r.name === undefined ? [] : [r.name])));
  for (const r of config.rules) {
    const subject = `${r.file}: ${r.path}`;
    if (!r.unlimited && r.requestsPerUnit > 0 && r.purpose === undefined) {
      findings.push({
        code: 'RLS_MISSING_PURPOSE',
        severity: 'warn',
        subject,
        message: 'no purpose: treated as shedding, so its fail mode is degraded (a local limit per instance while Redis is down); say purpose: abuse or shedding',
      });
    }
    if (!r.unlimited && r.requestsPerUnit > 0 && r.onError === undefined && r.purpose !== undefined) {
      findings.push({ code: 'RLS_DEFAULT_FAIL_MODE', severity: 'info', subject, message: `onError not stated: ${r.purpose === 'abuse' ? 'closed' : 'degraded'} (the default for ${r.purpose})` });
    }
    if (!r.unlimited && r.requestsPerUnit === 0) findings.push({ code: 'RLS_BLOCKED', severity: 'info', subject, message: 'requests_per_unit: 0 blocks every request it matches' });
    for (const n of r.replaces) {
      if (!names.has(n)) findings.push({ code: 'RLS_REPLACES_UNKNOWN', severity: 'warn', subject, message: `replaces ${JSON.stringify(n)}, which no rule is named` });
    }
    if (!r.unlimited && r.requestsPerUnit > 0 && r.purpose !== undefined && r.reason === undefined) {
      findings.push({ code: 'RLS_MISSING_REASON', severity: 'info', subject, message: 'no reason: say what the number defends' });
    }
  }
  return { files: config.files, rules: rulesTable(config), findings };
}
