import type { IncomingMessage } from 'node:http';

/** A request the service answers itself for the form of its target or `Host` (RFC 9112 section 3.2). */
export interface TargetRefusal {
  readonly status: 400 | 501;
  readonly detail: string;
}

/** RFC 3986 authority without userinfo: an IP literal or a reg-name (unreserved, pct-encoded, sub-delims), and an optional port. */
const AUTHORITY = /^(?:\[[0-9A-Za-z:._~!$&'()*+,;=-]+\]|[0-9A-Za-z._~!$&'()*+,;=%-]*)(?::[0-9]*)?$/;
/** The absolute-form: scheme, authority, then path and query (the fragment is never sent). */
const ABSOLUTE = /^(https?):\/\/([^/?#]*)([^#]*)$/i;

/**
 * Checks the request target and `Host` of `req`, and rewrites an
 * absolute-form target in place (RFC 9112 section 3.2):
 * - more than one `Host` line, or a `Host` that is not an authority
 *   (`host[:port]`, no userinfo, no path): 400; an HTTP/1.1 request without
 *   `Host`: 400 (Node's parser refuses it first; held here too);
 * - origin-form (`/path?query`): as is;
 * - absolute-form (`http://host/path`): `req.url` becomes the origin-form
 *   path and query, and the target's authority replaces `Host` (section
 *   3.2.2), so route matching, limits and forwarding see the same request
 *   as its origin-form spelling; a userinfo or another scheme: 400;
 * - asterisk-form (`OPTIONS *`): 501, it is not forwarded;
 * - anything else: 400.
 * Returns the refusal, or `undefined` when the request goes on.
 */
export function readTarget(req: IncomingMessage): TargetRefusal | undefined {
  const raw = req.rawHeaders;
  let hosts = 0;
  let host: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') {
      hosts++;
      host = raw[i + 1];
    }
  }
  if (hosts > 1) return { status: 400, detail: 'the request has more than one Host field' };
  if (host === undefined) {
    if (req.httpVersionMajor > 1 || (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1)) return { status: 400, detail: 'an HTTP/1.1 request needs a Host field' };
  } else if (!AUTHORITY.test(host)) return { status: 400, detail: 'the Host field is not an authority (host[:port])' };
  const url = req.url ?? '';
  if (url.charCodeAt(0) === 47) return undefined;
  if (url === '*') return req.method === 'OPTIONS' ? { status: 501, detail: 'OPTIONS * (the asterisk-form) is not forwarded' } : { status: 400, detail: 'only OPTIONS takes the target *' };
  const m = ABSOLUTE.exec(url);
  if (m === null) return { status: 400, detail: 'the request target is neither a path (/path) nor an absolute http(s) URL' };
  const authority = (m[2] ?? '').toLowerCase();
  if (authority.includes('@')) return { status: 400, detail: 'the request target carries userinfo' };
  if (authority === '' || !AUTHORITY.test(authority)) return { status: 400, detail: 'the request target has no valid authority' };
  const rest = m[3] ?? '';
  req.url = rest.startsWith('/') ? rest : `/${rest}`;
  req.headers.host = authority;
  return undefined;
}
