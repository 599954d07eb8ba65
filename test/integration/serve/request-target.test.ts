/**
 * `readTarget` (RFC 9112 section 3.2): origin-form targets go on as they are,
 * an absolute-form target becomes its path and query with its authority as
 * `Host`, and a malformed `Host` or target is refused. Properties over
 * generated URLs and authorities; the wire behaviour is held over sockets in
 * proxy-framing.test.ts.
 */
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readTarget } from '../../../packages/cli/src/serve/request-target.js';
import { fcBudget } from '../../helpers/fc-budget.js';

function request(method: string, url: string, rawHeaders: string[], version: '1.0' | '1.1' = '1.1'): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.method = method;
  req.url = url;
  req.rawHeaders = rawHeaders;
  // As Node's parser fills them: names in lower case, the first Host kept.
  const headers: Record<string, string> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) headers[(rawHeaders[i] as string).toLowerCase()] ??= rawHeaders[i + 1] as string;
  req.headers = headers;
  req.httpVersionMajor = 1;
  req.httpVersionMinor = version === '1.1' ? 1 : 0;
  req.httpVersion = version;
  return req;
}

const path = fc.tuple(fc.webPath(), fc.option(fc.webQueryParameters(), { nil: undefined })).map(([p, q]) => (p.startsWith('/') ? p : `/${p}`) + (q === undefined ? '' : `?${q}`));

describe('readTarget', () => {
  it('leaves an origin-form target and a valid Host as they are', () => {
    fc.assert(
      fc.property(path, fc.webAuthority({ withIPv4: true, withIPv6: true, withPort: true }), (target, host) => {
        const req = request('GET', target, ['Host', host]);
        expect(readTarget(req)).toBeUndefined();
        expect(req.url).toBe(target);
        expect(req.headers.host).toBe(host);
      }),
      fcBudget({ runs: 300, ms: 2000 }),
    );
  });

  it('turns an absolute-form target into its path and query, the authority (lower case) replacing Host', () => {
    fc.assert(
      fc.property(fc.constantFrom('http', 'https', 'HTTP'), fc.webAuthority({ withIPv4: true, withIPv6: true, withPort: true }), path, fc.boolean(), (scheme, authority, target, bare) => {
        const req = request('GET', `${scheme}://${authority}${bare ? '' : target}`, ['Host', 'other.example']);
        expect(readTarget(req)).toBeUndefined();
        expect(req.url).toBe(bare ? '/' : target);
        expect(req.headers.host).toBe(authority.toLowerCase());
      }),
      fcBudget({ runs: 300, ms: 2000 }),
    );
  });

  it('refuses a Host or absolute-form authority with userinfo, a path, a space or a control character', () => {
    fc.assert(
      fc.property(fc.webAuthority(), fc.constantFrom('user@', 'a b', '/x', '\t', '\u0001', '"'), fc.boolean(), (authority, bad, asTarget) => {
        // In a target a path after the authority is its path, not a fault.
        const inTarget = asTarget && bad !== '/x';
        const spoiled = bad === 'user@' ? `user@${authority}` : `${authority}${bad}`;
        const req = inTarget ? request('GET', `http://${spoiled}/x`, ['Host', authority]) : request('GET', '/x', ['Host', spoiled]);
        expect(readTarget(req)?.status).toBe(400);
      }),
      fcBudget({ runs: 300, ms: 2000 }),
    );
  });

  it('refuses two Host lines, no Host on HTTP/1.1, other target forms; answers OPTIONS * 501; takes HTTP/1.0 without Host', () => {
    expect(readTarget(request('GET', '/x', ['Host', 'a', 'host', 'a']))?.status).toBe(400);
    expect(readTarget(request('GET', '/x', []))?.status).toBe(400);
    expect(readTarget(request('GET', '/x', [], '1.0'))).toBeUndefined();
    expect(readTarget(request('GET', 'x', ['Host', 'a']))?.status).toBe(400);
    expect(readTarget(request('GET', 'ftp://a/x', ['Host', 'a']))?.status).toBe(400);
    expect(readTarget(request('GET', 'http:///x', ['Host', 'a']))?.status).toBe(400);
    expect(readTarget(request('GET', '*', ['Host', 'a']))?.status).toBe(400);
    expect(readTarget(request('OPTIONS', '*', ['Host', 'a']))).toEqual({ status: 501, detail: 'OPTIONS * (the asterisk-form) is not forwarded' });
    // An empty Host is what a client sends for a target without an authority (RFC 9112 section 3.2).
    expect(readTarget(request('GET', '/x', ['Host', '']))).toBeUndefined();
  });
});
