export { redisHttpStore, REDIS_HTTP_STORE_DEFAULTS, type RedisHttpStoreOptions } from './redis-http-store.js';
export type { FetchLike } from './rest-client.js';
export type { RedisStore, BatchOptions } from '../redis/redis-store.js';
