/**
 * Every parser the fuzzers drive, and the error classes they may throw: the
 * one place test/fuzz imports the sources from, so a move of src/ changes
 * this file only.
 */
export { parseDuration, ConfigError, RateContractError, memoryStore } from '../../src/index.js';
export { parseConfig, ConfigFileError, auditContract } from '../../src/config/index.js';
export { parseRlsConfig } from '../../src/rls/config.js';
export { RlsEngine, RlsServiceError } from '../../src/rls/engine.js';
export { requestFrom } from '../../src/rls/wire.js';
export { matchRequest } from '../../src/rls/match.js';
export { parseCombinedLine, parseJsonLine, readLog } from '../../src/cli/logs.js';
export { parseTimeValue, parseClfTime, parseIsoTime } from '../../src/cli/timestamps.js';
export {
  parseForwarded,
  parseXForwardedFor,
  parseIp,
  parseCidr,
  formatIp,
  clientAddress,
  resolveIpOptions,
  trustsPeer,
} from '../../src/http/index.js';
export { parseRateLimit, parsePolicy } from '../../src/client/fields.js';
export { retryAfterMs } from '../../src/client/retry-after.js';
export { parseHttpDate } from '../../src/client/http-date.js';
