import type { ServerOptions } from 'node:http';

/** Largest request head (request line and fields) the service reads, bytes; past it: 431. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Default bound on receiving a request head (`--headers-timeout`); past it: 408 and the connection closed. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/** Bound on receiving a whole request, head and body; past it: 408 (or the connection cut once an answer started). */
export const REQUEST_TIMEOUT_MS = 300_000;
/** How long an idle keep-alive connection is kept open. */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** Longest pause between the checks of the head and request bounds (each bound may be overrun by up to this much). */
export const MAX_CHECK_INTERVAL_MS = 1_000;

/**
 * The options of the service's HTTP server, set explicitly so that neither
 * Node's defaults nor a process-wide flag (`--insecure-http-parser`,
 * `--max-http-header-size` in `NODE_OPTIONS`) can loosen them: the strict
 * parser (request smuggling shapes, obs-fold and bare LF are refused with
 * 400), a 16 KiB head, the head and request bounds, and repeated fields kept
 * apart (never joined). `Host` is checked by `readTarget`.
 */
export function serverOptions(headersTimeoutMs: number = DEFAULT_HEADERS_TIMEOUT_MS): ServerOptions {
  return {
    insecureHTTPParser: false,
    maxHeaderSize: MAX_HEADER_BYTES,
    headersTimeout: headersTimeoutMs,
    requestTimeout: Math.max(REQUEST_TIMEOUT_MS, headersTimeoutMs),
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, Math.max(50, Math.floor(headersTimeoutMs / 4))),
    // A missing Host on HTTP/1.1 is refused by readTarget (with problem details, as every refusal).
    requireHostHeader: false,
    joinDuplicateHeaders: false,
  };
}
