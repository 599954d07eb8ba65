export { createLimiter } from './limiter.js';
export type { Limiter, LimiterOptions } from './core/limiter.js';
export { memoryStore, MemoryStore, type MemoryStoreOptions } from './stores/memory/index.js';
export { systemClock, ManualClock, type Clock } from './core/clock.js';
export { parseDuration, formatDuration, type Duration } from './core/duration.js';
export { RateContractError, ConfigError, UsageError, type ErrorCode } from './core/errors.js';
export { CHANNELS } from './core/events.js';
export { boundKey, compileKey, GLOBAL_KEY, MAX_RAW_KEY_LENGTH } from './core/keys.js';
export { compileLimit, compileLimits, DEFAULT_FAIL_CLOSED_AFTER_MS } from './core/compile.js';
export { runChain, runRefund, type StateAccess } from './core/chain.js';
export { isSyncStore, type Store, type SyncStore, type StoreOp, type StoreOpResult } from './core/store.js';
export type {
  CheckOptions,
  CompiledLimit,
  Decision,
  BuiltinKey,
  KeyFunction,
  KeySpec,
  LimitDefinition,
  LimitResult,
  OnError,
  Outcome,
  Purpose,
  RequestContext,
  Source,
} from './core/types.js';
export {
  algorithms,
  fixedWindow,
  slidingLog,
  slidingWindow,
  slidingWindowEstimate,
  tokenBucket,
  leakyBucket,
  gcra,
  concurrency,
  releaseLease,
  type Algorithm,
  type AlgorithmName,
  type AlgorithmParams,
  type AlgorithmResult,
  type FixedWindowState,
  type SlidingLogState,
  type SlidingWindowState,
  type TokenBucketState,
  type LeakyBucketState,
  type GcraState,
  type ConcurrencyState,
  type Lease,
} from './algorithms/index.js';
export {
  mapDecision,
  resolveResponseOptions,
  retryAfterSeconds,
  trustsPeer,
  PROBLEM_TYPES,
  HttpGuard,
  Unexpected,
  type GuardResult,
  type RequestFacts,
  type HttpResponse,
  type GuardOptions,
  type Advertise,
  type HeaderShape,
  type TrustProxy,
} from './http/index.js';
export { StoreGuard, StoreTimeoutError, BreakerOpenError, DEFAULT_DEADLINE_MS, type BreakerOptions, type BreakerState } from './core/guard.js';
