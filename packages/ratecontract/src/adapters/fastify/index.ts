export { rateLimitPlugin, type FastifyRateLimitOptions, type RouteRateLimitConfig } from './plugin.js';
export { PROBLEM_TYPES, type Advertise, type HeaderShape, type TrustProxy } from '../../http/index.js';
