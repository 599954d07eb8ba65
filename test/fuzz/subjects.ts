/**
 * Every parser the fuzzers drive, and the error classes they may throw: the
 * one place test/fuzz imports the sources from, so a move of src/ changes
 * this file only.
 */
export { parseDuration, ConfigError, RateContractError, memoryStore } from '../../packages/ratecontract/src/index.js';
export { parseConfig, ConfigFileError } from '../../packages/ratecontract/src/config/index.js';
export { auditContract } from '../../packages/cli/src/contract/audit.js';
export { parseRlsConfig } from '../../packages/cli/src/rls/config.js';
export { RlsEngine, RlsServiceError } from '../../packages/cli/src/rls/engine.js';
export { requestFrom } from '../../packages/cli/src/rls/wire.js';
export { matchRequest } from '../../packages/cli/src/rls/descriptor-match.js';
export { parseCombinedLine, parseJsonLine, readLog } from '../../packages/cli/src/cli/logs.js';
export { parseTimeValue, parseClfTime, parseIsoTime } from '../../packages/cli/src/cli/timestamps.js';
export {
  parseForwarded,
  parseXForwardedFor,
  parseIp,
  parseCidr,
  clientAddress,
  resolveIpOptions,
  trustsPeer,
} from '../../packages/ratecontract/src/http/index.js';
export { formatIp } from '../../packages/ratecontract/src/http/ip-address.js';
export { parseRateLimit, parsePolicy } from '../../packages/ratecontract/src/client/read-fields.js';
export { retryAfterMs } from '../../packages/ratecontract/src/client/read-retry-after.js';
export { parseHttpDate } from '../../packages/ratecontract/src/client/http-date.js';
