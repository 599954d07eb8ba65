import { bySeverity, limitFindings, type Finding } from '../contract/audit-findings.js';
import type { RlsConfig, RlsRule } from './config.js';
import { rulesTable, type RuleRow } from './rules-table.js';

/** One finding of `ratecontract audit --rls`: a code of the one set `audit` uses (docs/audit.md), about one rule. */
export type RlsFinding = Finding;

/** The audit of a rate limit service config: the rules with their fail modes made explicit, and the findings. */
export interface RlsAudit {
  readonly files: readonly string[];
  readonly rules: readonly RuleRow[];
  readonly findings: readonly RlsFinding[];
}

/** What the drop-in default means for the rule: the fail mode the library's compiler gave it. */
function defaultPurposeMessage(r: RlsRule, onError: string): string {
  const stated = r.definition?.onError !== undefined;
  const mode = stated
    ? `it fails ${onError} (as stated)`
    : `it fails ${onError}${onError === 'degraded' ? ' (while the store is down, each instance admits up to N on its own)' : ''}`;
  return `no purpose: the drop-in default made it a shedding rule, so ${mode}; say purpose: abuse (a security control; fails closed by default) or shedding`;
}

/**
 * Audits an rls config. A rule that counts and states no purpose gets only
 * `RC_AUDIT_DEFAULT_PURPOSE` (the translation's drop-in default): the
 * library's findings about a limit (`limitFindings`, as for a contract) and
 * `RC_AUDIT_DEFAULT_FAIL_MODE` appear once it states one, so fixing the first
 * finding shows the next. Errors first, then warnings, then the rest.
 */
export function auditRls(config: RlsConfig): RlsAudit {
  const findings: Finding[] = [];
  const names = new Set(config.rules.flatMap((r) => (r.name === undefined ? [] : [r.name])));
  for (const r of config.rules) {
    const subject = `${r.file}: ${r.path}`;
    const l = r.compiled;
    if (l !== undefined && r.requestsPerUnit > 0) {
      if (!r.purposeStated) {
        findings.push({ code: 'RC_AUDIT_DEFAULT_PURPOSE', severity: 'warn', subject, message: defaultPurposeMessage(r, l.onError) });
      } else {
        findings.push(...limitFindings(l, subject));
        if (r.definition?.onError === undefined) {
          findings.push({ code: 'RC_AUDIT_DEFAULT_FAIL_MODE', severity: 'info', subject, message: `onError not stated: ${l.onError} (the library's default for ${l.purpose})` });
        }
      }
    }
    if (l !== undefined && r.requestsPerUnit === 0) findings.push({ code: 'RC_AUDIT_BLOCKS_ALL', severity: 'info', subject, message: 'requests_per_unit: 0 blocks every request it matches' });
    for (const n of r.replaces) {
      if (!names.has(n)) findings.push({ code: 'RC_AUDIT_REPLACES_UNKNOWN', severity: 'warn', subject, message: `replaces ${JSON.stringify(n)}, which no rule is named` });
    }
  }
  return { files: config.files, rules: rulesTable(config), findings: bySeverity(findings) };
}
