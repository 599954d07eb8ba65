export { redisStore, RedisStore, type RedisStoreOptions, type BatchOptions } from './redis-store.js';
export type { RedisClientLike, IoredisLike, NodeRedisLike } from './client.js';
export { keySlot, hashTagOf } from './slot.js';
