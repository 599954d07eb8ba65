export { createGuard, getDecision, getBody, type NodeGuard, type NodeGuardOptions, type RequestBody } from './middleware.js';
export { PROBLEM_TYPES, type Advertise, type HeaderShape, type TrustProxy } from '../../http/index.js';
