export { createFetch, type PoliteFetch } from './fetch.js';
export { RateLimitedError, RetryBudgetExceededError, type GiveUpReason } from './errors.js';
export { CLIENT_CHANNELS } from './events.js';
export { retryAfterMs } from './read-retry-after.js';
export { parseHttpDate } from './http-date.js';
export { parseRateLimit, parsePolicy, type ServiceLimit, type QuotaPolicy } from './read-fields.js';
export { backoffWait, serverWait, type Jitter, type Backoff } from './backoff.js';
export { safeRate, type Pacing } from './scopes.js';
export {
  DEFAULTS,
  type ClientOptions,
  type BackoffOptions,
  type RetryBudgetOptions,
  type AdaptiveThrottleOptions,
  type FetchLike,
  type WaitInfo,
  type WaitReason,
} from './options.js';
