import type { RequestContext } from '../core/types.js';
import type { HeaderRecord } from './forwarded.js';
import { resolveClientIp, type ResolvedIpOptions } from './client-ip.js';
import type { Traits } from './traits.js';

/** The \`ip\` key when no client address can be determined (no socket address): such requests share one bucket rather than escape \`ip\` limits. */
export const UNKNOWN_IP = 'unknown';

/** No request headers (what the \`ip\` key reads when no proxy is trusted: nothing). */
const NO_HEADERS: HeaderRecord = Object.freeze({});

export function query(url: string | undefined): Record<string, string | string[]> | undefined {
  if (url === undefined) return undefined;
  const q = url.indexOf('?');
  if (q < 0) return {};
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [k, v] of new URLSearchParams(url.slice(q + 1))) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

export function path(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/**
 * The one place the base context the limits' keys see is built, for every
 * path of the guard. \`headers\` is \`undefined\` when no limit (and no
 * trusted proxy) reads them, and \`query\` when no limit reads it, so a
 * request nothing reads them for never pays for building them (node:http
 * builds \`req.headers\` on first access).
 */
export function baseContext(
  remoteAddress: string | undefined,
  method: string | undefined,
  url: string | undefined,
  headers: HeaderRecord | undefined,
  ip: ResolvedIpOptions,
  t: Traits,
  principal: string | undefined,
  body: unknown,
): RequestContext {
  return {
    ip: resolveClientIp(remoteAddress, headers ?? NO_HEADERS, ip) ?? UNKNOWN_IP,
    principal,
    method,
    path: path(url),
    headers,
    query: t.query ? query(url) : undefined,
    body,
  };
}
