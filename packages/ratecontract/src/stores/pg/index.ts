export { pgQuotaStore, PgQuotaStore, MIN_QUOTA_WINDOW_MS, PG_QUOTA_STORE_DEFAULTS, type PgQuotaStoreOptions, type PgQueryable } from './pg-quota-store.js';
export { pgQuotaMigration, DEFAULT_QUOTA_TABLE } from './migration.js';
