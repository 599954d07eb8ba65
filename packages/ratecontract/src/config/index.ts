export { parseConfig, loadConfig, type ParseConfigOptions } from './parse.js';
export { validateConfig, formatPath, parsePath, type ValidateOptions, type ConfigPath } from './validate.js';
export { ConfigFileError } from './errors.js';
export { buildRuntime, type ContractRuntime, type RuntimeOptions, type RuntimeRoute, type OwnedRedisClient } from './runtime.js';
export {
  RouteTable,
  parseRoutePattern,
  type RoutePattern,
  type RouteMatch,
  type Segment,
} from './route-pattern.js';
export type {
  RateContractConfig,
  StoreConfig,
  MemoryStoreConfig,
  RedisStoreConfig,
  RouteConfig,
  HttpConfig,
  IdentifyConfig,
  JwtConfig,
} from './types.js';
