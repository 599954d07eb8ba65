export { startDecide, STATUS_FIELD, type DecideCounts, type DecideOptions, type DenyStatus, type RunningDecide } from './service.js';
export { assertDecidable, whyNotDecidable } from './honour.js';
export { readOriginalRequest, type OriginalRequest, type UnreadableSubrequest } from './original-request.js';
export { EMIT_TARGETS, emitProxyConfig, emitNginx, emitCaddy, emitHaproxy, emitHaproxyLua, proxyRoutes, pathRegex, methodRegex, type EmitOptions, type EmitTarget, type ProxyRoute, type Unreachable } from './emit.js';
