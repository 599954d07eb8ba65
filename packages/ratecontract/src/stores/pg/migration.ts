import { ConfigError } from '../../core/errors.js';

/** The table's default name. */
export const DEFAULT_QUOTA_TABLE = 'ratecontract_quota';

/** A table name: an unquoted identifier, optionally schema-qualified (`billing.quota`). */
export function checkTableName(table: unknown, option: string): string {
  if (typeof table !== 'string' || !/^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/.test(table)) {
    throw new ConfigError('RC_INVALID_OPTION', option, `must be a lower-case SQL identifier, optionally schema-qualified ('ratecontract_quota', 'billing.quota'), got ${JSON.stringify(table)}`);
  }
  return table;
}

/**
 * The migration that creates the quota store's one table (docs/pg.md): one
 * row per limit, hashed key and fixed window, holding the units counted in
 * it. `expires_at` (ms since the epoch, the window's end) is what
 * `store.prune()` deletes by. Idempotent (`IF NOT EXISTS`): run it at
 * deploy, or with `store.migrate()`.
 */
export function pgQuotaMigration(table: string = DEFAULT_QUOTA_TABLE): string {
  const t = checkTableName(table, 'pgQuotaMigration(table)');
  const index = `${t.replace('.', '_')}_expires_at`.replace(/^.*\./, '');
  return `CREATE TABLE IF NOT EXISTS ${t} (
  limit_id text NOT NULL,
  key_hash text NOT NULL,
  window_start bigint NOT NULL,
  used bigint NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (limit_id, key_hash, window_start)
);
CREATE INDEX IF NOT EXISTS ${index} ON ${t} (expires_at);
`;
}
