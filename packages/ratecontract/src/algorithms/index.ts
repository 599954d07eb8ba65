export type { Algorithm, AlgorithmName, AlgorithmParams, AlgorithmResult, Figures } from './types.js';
export { fixedWindow, type FixedWindowState } from './fixed-window.js';
export { slidingLog, type SlidingLogState } from './sliding-log.js';
export { slidingWindow, slidingWindowEstimate, type SlidingWindowState } from './sliding-window.js';
export { tokenBucket, type TokenBucketState } from './token-bucket.js';
export { leakyBucket, type LeakyBucketState } from './leaky-bucket.js';
export { gcra, type GcraState } from './gcra.js';
export { concurrency, releaseLease, type ConcurrencyState, type Lease } from './concurrency.js';
export { algorithms } from './registry.js';
