/**
 * `ratecontract`: the core. Limits and the limiter, the memory store and the
 * store contract, the algorithms, time, errors and events. The HTTP contract
 * for custom adapters is `ratecontract/http`; the framework adapters,
 * Redis, the client, config and testing have their own entries. The public
 * API is written down in docs/api.md and pinned by test/unit/api/exports.test.ts.
 */

// The limiter.
export { createLimiter } from './limiter.js';
export type { Limiter, LimiterOptions } from './core/limiter.js';
export type {
  BuiltinKey,
  CheckOptions,
  CompiledLimit,
  Decision,
  CostFunction,
  KeyFunction,
  KeySpec,
  LimitDefinition,
  LimitResult,
  OnError,
  Outcome,
  Purpose,
  RequestContext,
  Source,
  AllotmentTierDefinition,
  PreFilterTierDefinition,
  TierDefinition,
} from './core/types.js';
export { MAX_RAW_KEY_LENGTH } from './core/request-key.js';
export { DEFAULT_FAIL_CLOSED_AFTER_MS, MAX_KEY_SLOTS } from './core/compile.js';

// Load shedding by criticality (the HTTP adapters take it as the \`shedder\` option).
export {
  createShedder,
  CRITICALITIES,
  type Criticality,
  type Shedder,
  type ShedderOptions,
  type ShedDriver,
  type ShedAnswer,
  type ShedTicket,
  type ShedStats,
  type ShedStep,
} from './core/shedder.js';

// Fail modes: the circuit between the limiter and each store.
export {
  StoreTimeoutError,
  BreakerOpenError,
  StoreBusyError,
  DEFAULT_DEADLINE_MS,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_STARTUP_WAIT_MS,
  type BreakerOptions,
  type BreakerState,
  type StoreHealth,
} from './core/store-circuit.js';

// Stores: the memory store, and the contract for your own.
export { memoryStore, MemoryStore, type MemoryStoreOptions } from './stores/memory/index.js';
export { isSyncStore, isSingleOpStore, type Store, type SyncStore, type SingleOpStore, type StoreOp, type StoreOpResult } from './core/store.js';
export { runChain, runRefund, type StateAccess } from './core/chain.js';

// Algorithms: pure functions, the single source of truth (the Redis store runs their Lua twins).
export {
  algorithms,
  fixedWindow,
  slidingLog,
  slidingWindow,
  tokenBucket,
  leakyBucket,
  gcra,
  concurrency,
  releaseLease,
  type Algorithm,
  type AlgorithmName,
  type AlgorithmParams,
  type AlgorithmResult,
  type Figures,
  type FixedWindowState,
  type SlidingLogState,
  type SlidingWindowState,
  type AnySlidingWindowState,
  type SubWindowState,
  MAX_PRECISION,
  type TokenBucketState,
  type LeakyBucketState,
  type GcraState,
  type ConcurrencyState,
  type Lease,
} from './algorithms/index.js';

// Time.
export { systemClock, ManualClock, type Clock } from './core/clock.js';
export { parseDuration, formatDuration, type Duration } from './core/duration.js';

// Errors: one base class, a stable code per kind.
export { RateContractError, ConfigError, UsageError, StoreError, type ErrorCode } from './core/errors.js';

// Events on node:diagnostics_channel.
export {
  CHANNELS,
  type DecisionEvent,
  type StoreErrorEvent,
  type StoreFailureReason,
  type TimeoutEvent,
  type BreakerEvent,
  type FallbackEvent,
  type FailClosedEvent,
  type KeyErrorEvent,
  type ListErrorEvent,
  type CostErrorEvent,
  type ReplicasEvent,
  type StoreCallEvent,
  type ResetEvent,
  type PlanErrorEvent,
  type DeadConnectionEvent,
} from './core/events.js';
export { SHADOW_BYTES_PER_COUNTER, type ShadowKeyCount, type ShadowReport, type ShadowReportOptions } from './core/shadow-report.js';
export { AccessList, type AccessEntry, type AccessPredicate, type LimiterLists } from './core/access-list.js';
