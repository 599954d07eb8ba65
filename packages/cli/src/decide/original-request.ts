import type { IncomingHttpHeaders } from 'node:http';

/** The request a proxy asks about: its method and its target (path and query). */
export interface OriginalRequest {
  readonly method: string;
  readonly uri: string;
}

/** A subrequest decide cannot read: answered 400 with this detail. */
export interface UnreadableSubrequest {
  readonly detail: string;
}

/** The two spellings proxies use, in the order of the docs: Caddy and Traefik, then nginx's usual names. */
const FAMILIES = [
  { method: 'x-forwarded-method', uri: 'x-forwarded-uri', names: 'X-Forwarded-Method and X-Forwarded-Uri' },
  { method: 'x-original-method', uri: 'x-original-uri', names: 'X-Original-Method and X-Original-URI' },
] as const;

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const ABSOLUTE = /^https?:\/\/[^/?#]*([^#]*)$/i;

function one(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  const s = Array.isArray(v) ? (v.length === 1 ? v[0] : undefined) : v;
  return s === undefined || s === '' ? undefined : s;
}

/**
 * The original method and target of a forward-auth subrequest, from
 * `X-Forwarded-Method`/`X-Forwarded-Uri` (Caddy `forward_auth`, Traefik
 * `forwardAuth`) or `X-Original-Method`/`X-Original-URI` (nginx
 * `auth_request` with `proxy_set_header`). A proxy passes the client's own
 * fields on in the subrequest, so a client could add the family its proxy
 * does not set: when both families are present and disagree, the
 * subrequest is refused rather than one of them believed. An absolute
 * target (`http://host/path`) is taken as its path and query. Refused: no
 * method or no target, a field repeated, a method that is not a token, a
 * target that is not a path.
 */
export function readOriginalRequest(headers: IncomingHttpHeaders): OriginalRequest | UnreadableSubrequest {
  let found: OriginalRequest | undefined;
  for (const f of FAMILIES) {
    const method = one(headers, f.method);
    const uri = one(headers, f.uri);
    if (method === undefined && uri === undefined) continue;
    if (method === undefined || uri === undefined) return { detail: `the subrequest carries only one of ${f.names}, once each` };
    if (!TOKEN.test(method)) return { detail: `${f.method} is not an HTTP method: ${JSON.stringify(method.slice(0, 40))}` };
    let target = uri;
    if (target.charCodeAt(0) !== 47) {
      const m = ABSOLUTE.exec(target);
      if (m === null) return { detail: `${f.uri} is neither a path (/path) nor an absolute http(s) URL` };
      target = m[1] === undefined || !m[1].startsWith('/') ? `/${m[1] ?? ''}` : m[1];
    }
    const next = { method: method.toUpperCase(), uri: target };
    if (found !== undefined && (found.method !== next.method || found.uri !== next.uri)) {
      return { detail: 'X-Forwarded-Method/-Uri and X-Original-Method/-URI disagree: the proxy sets one family, so the other came from the client' };
    }
    found = next;
  }
  return found ?? { detail: 'the subrequest names no original request: the proxy must send X-Forwarded-Method and X-Forwarded-Uri, or X-Original-Method and X-Original-URI' };
}
