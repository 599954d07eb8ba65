import type { CompiledLimit } from 'ratecontract';

/** Severity of a finding: an `error` makes `ratecontract audit` exit 1. */
export type Severity = 'error' | 'warn' | 'info';

/**
 * Stable finding codes of `audit` and `audit --rls`, one set for both
 * (docs/audit.md). A code never changes meaning once released.
 */
export type FindingCode =
  | 'RC_AUDIT_ABUSE_FAIL_OPEN'
  | 'RC_AUDIT_SHARED_FAILURE_DOMAIN'
  | 'RC_AUDIT_CLIENT_CHOSEN_KEY'
  | 'RC_AUDIT_NO_REASON'
  | 'RC_AUDIT_GLOBAL_ONLY'
  | 'RC_AUDIT_ROUTE_UNCOVERED'
  | 'RC_AUDIT_UNUSED_LIMIT'
  | 'RC_AUDIT_NEVER_TRIPS'
  | 'RC_AUDIT_UNBOUNDED_KEYSPACE'
  | 'RC_AUDIT_MEMORY_STORE_REPLICAS'
  | 'RC_AUDIT_NO_CATCH_ALL'
  | 'RC_AUDIT_SHADOW'
  | 'RC_AUDIT_FIXED_WINDOW_BOUNDARY'
  // The translation of an rls config (audit --rls):
  | 'RC_AUDIT_DEFAULT_PURPOSE'
  | 'RC_AUDIT_DEFAULT_FAIL_MODE'
  | 'RC_AUDIT_BLOCKS_ALL'
  | 'RC_AUDIT_REPLACES_UNKNOWN';

export interface Finding {
  readonly code: FindingCode;
  readonly severity: Severity;
  /** The limit, route or rule concerned: `limits[2] otp-ip`, `routes[0] POST /otp/send`, `(contract)`, or `file: domain.key_value` (rls). */
  readonly subject: string;
  readonly message: string;
}

/** `1.67`, `0.2`, `12`: at most two decimals, no trailing zeros. */
export function num(x: number): string {
  if (Number.isInteger(x)) return String(x);
  return x.toFixed(2).replace(/\.?0+$/, '');
}

/**
 * The findings about one compiled limit on its own, whatever file it came
 * from: a contract's limit or an rls rule's (the same codes and severities
 * for both).
 */
export function limitFindings(l: CompiledLimit, subject: string): Finding[] {
  const out: Finding[] = [];
  if (l.purpose === 'abuse' && l.onError === 'open') {
    out.push({ code: 'RC_AUDIT_ABUSE_FAIL_OPEN', severity: 'warn', subject, message: `abuse limit fails open: while its store is down an attacker gets unmetered attempts. Acknowledged: ${JSON.stringify(l.acknowledgeFailOpen)}` });
  }
  if (l.reason === undefined || l.reason.trim() === '') {
    out.push({ code: 'RC_AUDIT_NO_REASON', severity: 'warn', subject, message: 'no reason: say what the number defends, so the next person can tell a typo from a decision' });
  }
  if (l.shadow) out.push({ code: 'RC_AUDIT_SHADOW', severity: 'info', subject, message: 'shadow: decided and reported, never enforced' });
  if (l.algorithm === 'fixed-window') {
    out.push({ code: 'RC_AUDIT_FIXED_WINDOW_BOUNDARY', severity: 'info', subject, message: `fixed window: up to ${2 * l.params.limit} in ${num(l.params.windowMs / 1000)} s across a boundary; gcra or sliding-log hold ${l.params.limit}` });
  }
  return out;
}

const RANK: Readonly<Record<Severity, number>> = { error: 0, warn: 1, info: 2 };

/** Errors first, then warnings, then the rest; in their order within each (a stable sort). */
export function bySeverity(findings: readonly Finding[]): Finding[] {
  return [...findings].sort((a, b) => RANK[a.severity] - RANK[b.severity]);
}
