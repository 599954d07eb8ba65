export { redisStore, RedisStore, type RedisStoreOptions } from './redis-store.js';
export type { RedisClientLike, IoredisLike, NodeRedisLike } from './client.js';
export { decodeState } from './codec.js';
export { keySlot, hashTagOf } from './slot.js';
export { chainScript, refundScript, releaseScript, heartbeatScript, type LuaScript } from './scripts.generated.js';
