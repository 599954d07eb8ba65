export { rateLimit, type ExpressRateLimitOptions } from './middleware.js';
export { PROBLEM_TYPES, type Advertise, type HeaderShape, type TrustProxy } from '../../http/index.js';
