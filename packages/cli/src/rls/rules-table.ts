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

/** The rules as `/contract` shows them: every clause, the fail mode as the library's compiler made it. */
export function rulesTable(config: RlsConfig): RuleRow[] {
  return config.rules.map((r) => ({
    rule: r.id,
    path: r.path,
    file: r.file,
    name: r.name,
    bound: r.unlimited ? 'unlimited' : `${r.requestsPerUnit} per ${r.unit ?? '?'}`,
    algorithm: r.compiled?.algorithm,
    burst: r.definition?.burst,
    purpose: r.compiled === undefined ? 'none (unlimited)' : r.purposeStated ? r.compiled.purpose : `${r.compiled.purpose} (not stated)`,
    onError: r.compiled?.onError,
    store: r.store,
    shadow: r.shadow,
    replaces: r.replaces.length > 0 ? r.replaces : undefined,
    reason: r.reason,
  }));
}
