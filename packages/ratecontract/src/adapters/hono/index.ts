export { rateLimit, type HonoRateLimitOptions, type RateLimitVariables } from './middleware.js';
export { PROBLEM_TYPES, type Advertise, type HeaderShape, type TrustProxy } from '../../http/index.js';
