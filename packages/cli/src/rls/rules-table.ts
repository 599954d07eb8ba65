import type { RlsConfig } from './config.js';

/** One rule as `/contract` shows it. */
export interface RuleRow {
  readonly rule: string;
  readonly path: string;
  readonly file: string;
  readonly name: string | undefined;
  readonly bound: string;
  readonly algorithm: string | undefined;
  readonly burst: number | undefined;
  readonly purpose: string;
  readonly onError: string | undefined;
  readonly store: string;
  readonly shadow: boolean;
  readonly replaces: readonly string[] | undefined;
  readonly reason: string | undefined;
}

/** The rules as `/contract` shows them: every clause, the fail mode made explicit. */
export function rulesTable(config: RlsConfig): RuleRow[] {
  return config.rules.map((r) => ({
    rule: r.id,
    path: r.path,
    file: r.file,
    name: r.name,
    bound: r.unlimited ? 'unlimited' : `${r.requestsPerUnit} per ${r.unit ?? '?'}`,
    algorithm: r.unlimited ? undefined : r.algorithm,
    burst: r.burst,
    purpose: r.purpose ?? 'shedding (not stated)',
    onError: r.unlimited ? undefined : (r.onError ?? ((r.purpose ?? 'shedding') === 'abuse' ? 'closed' : 'degraded')),
    store: r.store,
    shadow: r.shadow,
    replaces: r.replaces.length > 0 ? r.replaces : undefined,
    reason: r.reason,
  }));
}
