/**
 * What a reverse proxy owes its clients and its upstream (RFC 9110, RFC
 * 9112), held on `ratecontract serve --upstream` spawned as a user runs it,
 * over real sockets, on a limited route (told its RateLimit fields:
 * `http.advertise: always`), an unlimited one (no route matches) and a
 * rejected one (its limit spent) alike, against an upstream of the test's
 * own that records every request it sees. One spawned serve for the file.
 *
 * Clients: undici `request` and `fetch` where a library shows what matters
 * (repeated `Set-Cookie`), exact bytes over `net` where it would hide it (1xx
 * answers, a body after HEAD, 204 or 304, hop-by-hop fields).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, upstreamServer, type Served } from './helpers.js';
import { parseHead, rawExchange, values } from './raw-http.js';

const CONTRACT = `http:
  advertise: always
limits:
  - { name: roomy, purpose: abuse, limit: 100000, window: 1m, key: ip }
  - { name: spent, purpose: abuse, limit: 1, window: 1h, key: ip }
routes:
  - { match: "* /limited/*", limits: [roomy] }
  - { match: "* /rejected/*", limits: [spent] }
`;

interface Seen {
  readonly method: string;
  readonly url: string;
  /** The request's field lines as the upstream received them, names in lower case. */
  readonly fields: ReadonlyArray<readonly [string, string]>;
  readonly body: string;
}

const UPSTREAM_COOKIES = ['a=1; Path=/', 'b=2; Path=/; HttpOnly'];
const UPSTREAM_LINKS = ['</a.css>; rel=preload; as=style', '</b.js>; rel=preload; as=script'];
const HINTS = ['</hint.css>; rel=preload; as=style', '</hint.js>; rel=preload; as=script'];

function pairs(raw: readonly string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < raw.length; i += 2) out.push([(raw[i] as string).toLowerCase(), raw[i + 1] as string]);
  return out;
}

function fieldValues(seen: Seen, name: string): string[] {
  return seen.fields.filter(([n]) => n === name).map(([, v]) => v);
}

/** The upstream's answers, by the last path segment. */
function answer(req: IncomingMessage, res: ServerResponse, body: string): void {
  const url = new URL(req.url ?? '/', 'http://upstream');
  const name = url.pathname.split('/').pop();
  switch (name) {
    case 'cookies':
      res.writeHead(200, [
        'content-type', 'text/plain',
        ...UPSTREAM_COOKIES.flatMap((c) => ['set-cookie', c]),
        ...UPSTREAM_LINKS.flatMap((l) => ['link', l]),
        'vary', 'Accept-Encoding',
        'vary', 'Origin',
        // The upstream's own rate-limit fields: kept, after the contract's.
        'ratelimit-policy', '"upstream";q=5;w=1',
        'ratelimit', '"upstream";r=4;t=1',
      ]);
      res.end('cookies');
      return;
    case 'hop':
      // Exact bytes: every hop-by-hop field an answer can carry, on a connection that closes after it.
      req.socket.end(
        'HTTP/1.1 200 OK\r\nConnection: close, X-Up-Hop\r\nX-Up-Hop: secret\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\n' +
          'TE: trailers\r\nUpgrade: h2c\r\nX-End: kept\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok',
      );
      return;
    case 'head':
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1234', etag: '"h1"' });
      res.end(req.method === 'HEAD' ? undefined : 'x'.repeat(1234));
      return;
    case 'cond':
      if (req.headers['if-none-match'] === '"v1"' || req.headers['if-modified-since'] !== undefined) {
        res.writeHead(304, { etag: '"v1"', 'cache-control': 'max-age=60' });
        res.end();
      } else {
        res.writeHead(200, { 'content-type': 'text/plain', etag: '"v1"', 'last-modified': 'Mon, 01 Jan 2024 00:00:00 GMT' });
        res.end('fresh');
      }
      return;
    case 'nocontent':
      res.writeHead(204, { 'x-done': 'yes' });
      res.end();
      return;
    case 'hints':
      res.writeEarlyHints({ link: HINTS });
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '6' });
        res.end('hinted');
      }, 20);
      return;
    case 'trailers':
      res.writeHead(200, { 'content-type': 'text/plain', trailer: 'x-checksum' });
      res.write('one,');
      setTimeout(() => {
        res.write('two');
        res.addTrailers({ 'x-checksum': 'sha=abc' });
        res.end();
      }, 10);
      return;
    default: {
      const text = JSON.stringify({ method: req.method, url: req.url, body });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
      res.end(text);
    }
  }
}

const KINDS = ['limited', 'open', 'rejected'] as const;
type Kind = (typeof KINDS)[number];

describe('ratecontract serve --upstream: what a reverse proxy owes (RFC 9110, RFC 9112)', () => {
  let dir: string;
  let up: Awaited<ReturnType<typeof upstreamServer>>;
  let s: Served;
  const seen: Seen[] = [];
  /** Requests whose head reached the upstream (counted when it arrives, before any body). */
  let arrived = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rc-semantics-'));
    writeFileSync(join(dir, 'contract.yaml'), CONTRACT);
    up = await upstreamServer((req, res) => {
      arrived++;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        seen.push({ method: req.method ?? '', url: req.url ?? '', fields: pairs(req.rawHeaders), body });
        answer(req, res, body);
      });
    });
    s = await serve(['--config', join(dir, 'contract.yaml'), '--upstream', up.url, '--port', '0', '--admin-port', '0']);
    // Spend the rejected route's one request.
    const r = await request(`${s.url}/rejected/spend`);
    await r.body.text();
    expect(r.statusCode).toBe(200);
  });
  afterAll(async () => {
    expect(await s?.stop()).toBe(0);
    await up?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `fn` and returns how many requests reached the upstream meanwhile. */
  async function reaching(fn: () => Promise<void>): Promise<number> {
    const before = arrived;
    await fn();
    return arrived - before;
  }
  const last = (): Seen => seen[seen.length - 1] as Seen;

  describe.each(KINDS)('on the %s route', (kind: Kind) => {
    const admitted = kind !== 'rejected';
    const status = admitted ? 200 : 429;
    const rejection = (text: string): void => {
      const head = parseHead(text);
      expect(head.status).toBe(429);
      expect(values(head, 'content-type')[0]).toMatch(/^application\/problem\+json/);
      expect(values(head, 'ratelimit')[0]).toMatch(/^"spent";r=0;t=\d+/);
    };

    it('passes every Set-Cookie, Link and Vary line of the answer (undici request, fetch), and the upstream RateLimit fields after the contract ones', async () => {
      const n = await reaching(async () => {
        const r = await request(`${s.url}/${kind}/cookies`);
        const body = await r.body.text();
        expect(r.statusCode).toBe(status);
        if (!admitted) {
          expect(r.headers['set-cookie']).toBeUndefined();
          expect(r.headers['ratelimit']).toMatch(/^"spent";r=0;t=\d+/);
          return;
        }
        expect(body).toBe('cookies');
        expect(r.headers['set-cookie']).toEqual(UPSTREAM_COOKIES);
        expect(r.headers['link']).toEqual(UPSTREAM_LINKS);
        expect(r.headers['vary']).toEqual(['Accept-Encoding', 'Origin']);
        if (kind === 'limited') {
          expect(r.headers['ratelimit-policy']).toEqual([expect.stringMatching(/^"roomy";q=100000;w=60/), '"upstream";q=5;w=1']);
          expect(r.headers['ratelimit']).toEqual([expect.stringMatching(/^"roomy";r=\d+;t=\d+/), '"upstream";r=4;t=1']);
        } else {
          expect(r.headers['ratelimit-policy']).toBe('"upstream";q=5;w=1');
          expect(r.headers['ratelimit']).toBe('"upstream";r=4;t=1');
        }
        const f = await fetch(`${s.url}/${kind}/cookies`);
        expect(await f.text()).toBe('cookies');
        expect(f.headers.getSetCookie()).toEqual(UPSTREAM_COOKIES);
      });
      expect(n).toBe(admitted ? 2 : 0);
    });

    it('forwards repeated request fields in order, drops the hop-by-hop ones (Connection and what it names, Keep-Alive, TE, Proxy-Connection, Upgrade outside an upgrade), adds Via', async () => {
      const head =
        `GET /${kind}/echo HTTP/1.1\r\nHost: api.example\r\n` +
        'X-Multi: one\r\nCookie: c=1\r\nX-Multi: two\r\nCookie: d=2\r\nAccept: text/plain\r\nAccept: application/json\r\n' +
        'Connection: close, X-Client-Hop\r\nX-Client-Hop: secret\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nProxy-Connection: keep-alive\r\nUpgrade: h2c\r\n' +
        'Via: 1.1 edge.example\r\nX-End: kept\r\n\r\n';
      const n = await reaching(async () => {
        const r = await rawExchange(s.url, head);
        if (!admitted) return rejection(r.text);
        expect(parseHead(r.text).status).toBe(200);
        const got = last();
        expect(got.url).toBe(`/${kind}/echo`);
        expect(fieldValues(got, 'x-multi')).toEqual(['one', 'two']);
        expect(fieldValues(got, 'cookie')).toEqual(['c=1', 'd=2']);
        expect(fieldValues(got, 'accept')).toEqual(['text/plain', 'application/json']);
        for (const hop of ['x-client-hop', 'keep-alive', 'te', 'proxy-connection', 'upgrade']) expect(fieldValues(got, hop)).toEqual([]);
        // The connection to the upstream is the proxy's own: its Connection field names nothing of the client's.
        expect(fieldValues(got, 'connection').join(',').toLowerCase()).not.toContain('x-client-hop');
        expect(fieldValues(got, 'via')).toEqual(['1.1 edge.example, 1.1 ratecontract']);
        expect(fieldValues(got, 'x-end')).toEqual(['kept']);
      });
      expect(n).toBe(admitted ? 1 : 0);
    });

    it('drops the hop-by-hop fields of the answer (Connection and what it names, Keep-Alive, Proxy-Connection, TE, Upgrade)', async () => {
      const n = await reaching(async () => {
        const r = await rawExchange(s.url, `GET /${kind}/hop HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n`);
        if (!admitted) return rejection(r.text);
        const h = parseHead(r.text);
        expect(h.status).toBe(200);
        expect(h.rest).toBe('ok');
        expect(values(h, 'x-end')).toEqual(['kept']);
        for (const hop of ['x-up-hop', 'keep-alive', 'proxy-connection', 'te', 'upgrade']) expect(values(h, hop)).toEqual([]);
        expect(values(h, 'connection')).toEqual(['close']);
      });
      expect(n).toBe(admitted ? 1 : 0);
    });

    it("answers HEAD with the upstream's Content-Length and no body", async () => {
      const n = await reaching(async () => {
        const r = await rawExchange(s.url, `HEAD /${kind}/head HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n`);
        expect(r.closed).toBe(true);
        const h = parseHead(r.text);
        expect(h.status).toBe(status);
        expect(h.rest).toBe('');
        if (!admitted) return;
        expect(values(h, 'content-length')).toEqual(['1234']);
        expect(values(h, 'etag')).toEqual(['"h1"']);
        expect(last().method).toBe('HEAD');
      });
      expect(n).toBe(admitted ? 1 : 0);
    });

    it('forwards If-None-Match and If-Modified-Since, and passes a 304 with no body', async () => {
      const n = await reaching(async () => {
        for (const condition of ['If-None-Match: "v1"', 'If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT']) {
          const r = await rawExchange(s.url, `GET /${kind}/cond HTTP/1.1\r\nHost: t\r\n${condition}\r\nConnection: close\r\n\r\n`);
          expect(r.closed).toBe(true);
          if (!admitted) {
            rejection(r.text);
            continue;
          }
          const h = parseHead(r.text);
          expect(h.status).toBe(304);
          expect(h.rest).toBe('');
          expect(values(h, 'etag')).toEqual(['"v1"']);
          expect(values(h, 'transfer-encoding')).toEqual([]);
          const [name, value] = condition.split(': ') as [string, string];
          expect(fieldValues(last(), name.toLowerCase())).toEqual([value]);
        }
        const fresh = await request(`${s.url}/${kind}/cond`);
        const text = await fresh.body.text();
        if (admitted) expect(text).toBe('fresh');
        else expect(JSON.parse(text)).toMatchObject({ status: 429 });
        expect(fresh.statusCode).toBe(status);
      });
      expect(n).toBe(admitted ? 3 : 0);
    });

    it('passes a 204 with no body and no framing fields', async () => {
      const n = await reaching(async () => {
        const r = await rawExchange(s.url, `GET /${kind}/nocontent HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n`);
        expect(r.closed).toBe(true);
        if (!admitted) return rejection(r.text);
        const h = parseHead(r.text);
        expect(h.status).toBe(204);
        expect(h.rest).toBe('');
        expect(values(h, 'x-done')).toEqual(['yes']);
        expect(values(h, 'transfer-encoding')).toEqual([]);
      });
      expect(n).toBe(admitted ? 1 : 0);
    });

    it('answers Expect: 100-continue once the limits admit the request; a rejected one gets its final status, no 100, and the connection closed', async () => {
      const n = await reaching(async () => {
        const r = await rawExchange(s.url, '', {
          drive: (socket, received) => {
            socket.write(`POST /${kind}/upload HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`);
            const poll = setInterval(() => {
              if (received().startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
                clearInterval(poll);
                socket.write('hello');
              } else if (received().length > 0 || socket.destroyed) clearInterval(poll);
            }, 5);
          },
          until: (text) => text.includes('"body":"hello"}'),
        });
        if (!admitted) {
          rejection(r.text);
          expect(r.text).not.toContain('100 Continue');
          expect(r.closed).toBe(true);
          return;
        }
        expect(r.text.startsWith('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n')).toBe(true);
        expect(JSON.parse(parseHead(r.text.slice('HTTP/1.1 100 Continue\r\n\r\n'.length)).rest)).toEqual({ method: 'POST', url: `/${kind}/upload`, body: 'hello' });
        expect(fieldValues(last(), 'expect')).toEqual([]);
      });
      expect(n).toBe(admitted ? 1 : 0);
    });

    it('passes 103 Early Hints on with their Link fields (and nothing of the contract), to HTTP/1.1 clients only', async () => {
      const n = await reaching(async () => {
        const r = await rawExchange(s.url, `GET /${kind}/hints HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n`);
        expect(r.closed).toBe(true);
        if (!admitted) {
          rejection(r.text);
          expect(r.text).not.toContain(' 103 ');
          return;
        }
        const hints = parseHead(r.text);
        expect(hints.status).toBe(103);
        expect(values(hints, 'link').join(', ')).toBe(HINTS.join(', '));
        expect(hints.fields.map(([name]) => name).filter((name) => name !== 'link')).toEqual([]);
        const final = parseHead(hints.rest);
        expect(final.status).toBe(200);
        expect(final.rest).toBe('hinted');
        // HTTP/1.0 has no 1xx (RFC 9110 section 15.2): the final answer only.
        const old = await rawExchange(s.url, `GET /${kind}/hints HTTP/1.0\r\nHost: t\r\n\r\n`);
        expect(parseHead(old.text).status).toBe(200);
        expect(old.text).not.toContain(' 103 ');
      });
      expect(n).toBe(admitted ? 2 : 0);
    });

    it('passes a chunked answer and its trailers', async () => {
      const n = await reaching(async () => {
        const got = await new Promise<{ status: number; te: string | undefined; body: string; trailers: NodeJS.Dict<string> }>((resolve, reject) => {
          const req = httpRequest(`${s.url}/${kind}/trailers`, { agent: false, headers: { te: 'trailers' } }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, te: res.headers['transfer-encoding'], body, trailers: res.trailers }));
          });
          req.on('error', reject);
          req.end();
        });
        expect(got.status).toBe(status);
        if (!admitted) return;
        expect(got.te).toBe('chunked');
        expect(got.body).toBe('one,two');
        expect(got.trailers).toEqual({ 'x-checksum': 'sha=abc' });
      });
      expect(n).toBe(admitted ? 1 : 0);
    });
  });
});
