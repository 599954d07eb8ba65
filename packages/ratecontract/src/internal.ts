/**
 * `ratecontract/internal`: the few helpers `@ratecontract/cli` (the servers
 * and tools) shares with the library. Not for applications: no
 * compatibility promise, and it may change in any release. Everything an
 * application uses is in the documented entries (docs/api.md).
 */
export { closest, didYouMean } from './core/suggest.js';
export { GLOBAL_KEY, boundKey } from './core/request-key.js';
export { refuseUnknown } from './core/options.js';
export { decisionKeys, WANT_KEYS } from './core/limiter.js';
export { compileLimit } from './core/compile.js';
export { cyclicAlias } from './config/parse.js';
export { compareSpecificity } from './config/route-pattern.js';
