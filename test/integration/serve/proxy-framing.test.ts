/**
 * What `ratecontract serve --upstream` refuses, and how (RFC 9112): request
 * smuggling shapes get 400 and never reach the upstream, a header block over
 * the limit gets 431, a client that sends its headers slowly is cut after
 * `--headers-timeout` (408), and the request target and `Host` are read as
 * RFC 9112 section 3.2 says. Exact bytes over `net`; the upstream counts every
 * request head that reaches it.
 *
 * Node's parser refuses most of these shapes already; the tests hold them all
 * the same, and run twice: as a user runs serve, and under
 * `NODE_OPTIONS=--insecure-http-parser`, the process-wide lenient switch, so
 * that no later option can undo a refusal. Two spawned services for the file.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** Shapes refused while the head is parsed, before any route is looked at. `P` is replaced by the route prefix. */
const HEAD_SHAPES: ReadonlyArray<readonly [string, string]> = [
  ['Content-Length with Transfer-Encoding', 'POST P/x HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
  ['Transfer-Encoding with Content-Length', 'POST P/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n'],
  ['two differing Content-Length fields', 'POST P/x HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!'],
  ['a Content-Length list', 'POST P/x HTTP/1.1\r\nHost: t\r\nContent-Length: 5, 6\r\n\r\nhello!'],
  ['a signed Content-Length', 'POST P/x HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\nhello'],
  ['an obs-fold line', 'GET P/x HTTP/1.1\r\nHost: t\r\nX-Folded: a\r\n b\r\n\r\n'],
  ['a bare LF ending every line', 'GET P/x HTTP/1.1\nHost: t\n\n'],
  ['a bare LF ending one field line', 'GET P/x HTTP/1.1\r\nHost: t\nX-A: b\r\n\r\n'],
  ['a bare CR inside the head', 'GET P/x HTTP/1.1\r\nHost: t\rX-A: b\r\n\r\n'],
  ['whitespace between a field name and its colon', 'POST P/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n'],
  ['chunked applied twice', 'POST P/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
  ['a NUL in a field value', 'GET P/x HTTP/1.1\r\nHost: t\r\nX-A: a\u0000b\r\n\r\n'],
  ['a space in a field name', 'GET P/x HTTP/1.1\r\nHost: t\r\nX A: b\r\n\r\n'],
  ['a lower-case protocol version', 'GET P/x http/1.1\r\nHost: t\r\n\r\n'],
];

/** Shapes refused in the body, after the head (and the route's decision) went through. */
const BODY_SHAPES: ReadonlyArray<readonly [string, string]> = [
  // Node's parser reads a head whose Transfer-Encoding does not end in chunked, and refuses the body.
  ['a Transfer-Encoding that does not end in chunked', 'POST P/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\nhello'],
  ['an invalid chunk size', 'POST P/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n'],
  ['a chunk size past 64 bits', 'POST P/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\nhello\r\n0\r\n\r\n'],
  ['a chunk without its CRLF', 'POST P/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX0\r\n\r\n'],
];

/** Shapes about the target and Host (RFC 9112 section 3.2). */
const TARGET_SHAPES: ReadonlyArray<readonly [string, string]> = [
  ['an HTTP/1.1 request without Host', 'GET P/x HTTP/1.1\r\n\r\n'],
  ['two Host fields', 'GET P/x HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n'],
  ['a Host with a space', 'GET P/x HTTP/1.1\r\nHost: a b\r\n\r\n'],
  ['a Host with a path', 'GET P/x HTTP/1.1\r\nHost: a.example/x\r\n\r\n'],
  ['a Host with userinfo', 'GET P/x HTTP/1.1\r\nHost: user@a.example\r\n\r\n'],
  ['a relative target', 'GET x HTTP/1.1\r\nHost: t\r\n\r\n'],
  ['an absolute-form target with userinfo', 'GET http://user@api.example/P/x HTTP/1.1\r\nHost: api.example\r\n\r\n'],
  ['an absolute-form target of another scheme', 'GET ftp://api.example/P/x HTTP/1.1\r\nHost: api.example\r\n\r\n'],
];

const PREFIXES = ['/limited', '/open', '/rejected'] as const;

const VARIANTS: ReadonlyArray<readonly [string, string | undefined]> = [
  ['as a user runs it', undefined],
  ['under NODE_OPTIONS=--insecure-http-parser', '--insecure-http-parser'],
];

describe.each(VARIANTS)('ratecontract serve --upstream %s: refused framing', (_label, nodeOptions) => {
  let dir: string;
  let up: Awaited<ReturnType<typeof upstreamServer>>;
  let s: Served;
  /** Every request head that reached the upstream: `METHOD url`, with the fields the tests look at. */
  const arrivals: Array<{ line: string; host: string | undefined; forwardedHost: string | undefined }> = [];
  /** The requests whose body the upstream read to its end. */
  const completed: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rc-framing-'));
    writeFileSync(join(dir, 'contract.yaml'), CONTRACT);
    up = await upstreamServer((req, res) => {
      arrivals.push({ line: `${req.method ?? ''} ${req.url ?? ''}`, host: req.headers.host, forwardedHost: req.headers['x-forwarded-host'] as string | undefined });
      req.resume();
      req.on('end', () => {
        completed.push(`${req.method ?? ''} ${req.url ?? ''}`);
        res.end('upstream');
      });
      req.on('error', () => undefined);
    });
    // The spawned service inherits this process's environment at spawn time (vitest runs each file in its own process).
    const before = process.env['NODE_OPTIONS'];
    if (nodeOptions !== undefined) process.env['NODE_OPTIONS'] = nodeOptions;
    try {
      s = await serve(['--config', join(dir, 'contract.yaml'), '--upstream', up.url, '--port', '0', '--admin-port', '0', '--headers-timeout', '1s']);
    } finally {
      if (before === undefined) delete process.env['NODE_OPTIONS'];
      else process.env['NODE_OPTIONS'] = before;
    }
    const r = await fetch(`${s.url}/rejected/spend`);
    await r.arrayBuffer();
    expect(r.status).toBe(200);
  });
  afterAll(async () => {
    expect(await s?.stop()).toBe(0);
    await up?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Sends `bytes`, then a sentinel request on a fresh connection, and returns
   * the answer and what reached the upstream meanwhile: anything the refused
   * request let through would have been sent before the sentinel.
   */
  async function refusedExchange(bytes: string): Promise<{ text: string; closed: boolean; reached: string[] }> {
    const before = arrivals.length;
    const r = await rawExchange(s.url, bytes);
    const sentinel = await fetch(`${s.url}/open/sentinel`);
    expect(await sentinel.text()).toBe('upstream');
    await new Promise((resolve) => setTimeout(resolve, 10));
    const reached = arrivals.slice(before).map((a) => a.line).filter((line) => line !== 'GET /open/sentinel');
    return { text: r.text, closed: r.closed, reached };
  }

  function expectRefused(text: string, status: number): void {
    const head = parseHead(text);
    expect(head.status).toBe(status);
    expect(values(head, 'connection')).toEqual(['close']);
    expect(values(head, 'content-type')).toEqual(['application/problem+json']);
    expect(JSON.parse(head.rest)).toMatchObject({ status, type: 'about:blank' });
  }

  for (const prefix of PREFIXES) {
    for (const [name, bytes] of HEAD_SHAPES) {
      it(`${prefix}: ${name} is answered 400, the connection closed, and nothing reaches the upstream`, async () => {
        const r = await refusedExchange(bytes.replace('P/', `${prefix}/`));
        expectRefused(r.text, 400);
        expect(r.closed).toBe(true);
        expect(r.reached).toEqual([]);
      });
    }
    for (const [name, bytes] of BODY_SHAPES) {
      it(`${prefix}: ${name} in the body is refused, the connection closed, and nothing reaches the upstream`, async () => {
        const r = await refusedExchange(bytes.replace('P/', `${prefix}/`));
        // A rejected route may have answered its 429 from the head already (then the connection is cut); either way nothing is forwarded.
        if (prefix === '/rejected' && r.text.startsWith('HTTP/1.1 429')) expect(parseHead(r.text).status).toBe(429);
        else expectRefused(r.text, 400);
        expect(r.closed).toBe(true);
        expect(r.reached).toEqual([]);
      });
    }
    for (const [name, bytes] of TARGET_SHAPES) {
      it(`${prefix}: ${name} is answered 400, and nothing reaches the upstream`, async () => {
        const r = await refusedExchange(bytes.replace('/P/', `${prefix}/`).replace('P/', `${prefix}/`));
        expectRefused(r.text, 400);
        expect(r.reached).toEqual([]);
      });
    }
  }

  it('a header block over 16 KiB is answered 431, and nothing reaches the upstream', async () => {
    for (const prefix of PREFIXES) {
      const big = `GET ${prefix}/x HTTP/1.1\r\nHost: t\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`;
      const many = `GET ${prefix}/x HTTP/1.1\r\nHost: t\r\n${Array.from({ length: 400 }, (_, i) => `X-Field-${i}: ${'b'.repeat(40)}\r\n`).join('')}\r\n`;
      for (const bytes of [big, many]) {
        const r = await refusedExchange(bytes);
        expectRefused(r.text, 431);
        expect(r.reached).toEqual([]);
      }
    }
    // Just under the bound goes through.
    const r = await rawExchange(s.url, `GET /open/fits HTTP/1.1\r\nHost: t\r\nConnection: close\r\nX-Big: ${'a'.repeat(15 * 1024)}\r\n\r\n`);
    expect(parseHead(r.text).status).toBe(200);
  });

  it('a client that sends its head slowly is answered 408 and cut after --headers-timeout (1s here), and nothing reaches the upstream', async () => {
    const before = arrivals.length;
    const r = await rawExchange(s.url, '', {
      budgetMs: 15_000,
      drive: (socket) => {
        socket.write('GET /open/slow HTTP/1.1\r\nHost: t\r\n');
        let i = 0;
        const timer = setInterval(() => {
          if (socket.destroyed || !socket.writable) clearInterval(timer);
          else socket.write(`X-Slow-${i++}: a\r\n`);
        }, 100);
        socket.once('close', () => clearInterval(timer));
      },
    });
    expect(r.closed).toBe(true);
    expectRefused(r.text, 408);
    // The bound is the timeout plus the server's check interval (at most 1 s): generous on a shared machine.
    expect(r.elapsedMs).toBeGreaterThanOrEqual(900);
    expect(r.elapsedMs).toBeLessThan(10_000);
    expect(arrivals.length).toBe(before);
  });

  it('an absolute-form target is read as its path, its authority replacing Host (RFC 9112 section 3.2.2); the route limits apply', async () => {
    const before = arrivals.length;
    const ok = await rawExchange(s.url, 'GET http://api.example/limited/abs?q=1 HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n');
    const head = parseHead(ok.text);
    expect(head.status).toBe(200);
    expect(values(head, 'ratelimit')[0]).toMatch(/^"roomy";r=\d+/);
    expect(arrivals.slice(before)).toEqual([{ line: 'GET /limited/abs?q=1', host: new URL(up.url).host, forwardedHost: 'api.example' }]);
    const root = await rawExchange(s.url, 'GET HTTP://API.example:8443 HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n');
    expect(parseHead(root.text).status).toBe(200);
    expect(arrivals[arrivals.length - 1]).toMatchObject({ line: 'GET /', forwardedHost: 'api.example:8443' });
    // A spent route is not escaped by spelling its target absolutely.
    const spent = await refusedExchange('GET http://api.example/rejected/abs HTTP/1.1\r\nHost: api.example\r\nConnection: close\r\n\r\n');
    expect(parseHead(spent.text).status).toBe(429);
    expect(spent.reached).toEqual([]);
  });

  it('an HTTP/1.0 request without Host is forwarded with the upstream Host', async () => {
    const r = await rawExchange(s.url, 'GET /open/old HTTP/1.0\r\n\r\n');
    expect(parseHead(r.text).status).toBe(200);
    expect(arrivals[arrivals.length - 1]).toEqual({ line: 'GET /open/old', host: new URL(up.url).host, forwardedHost: undefined });
  });

  it('OPTIONS * (asterisk-form) is answered by the proxy itself: 501, nothing forwarded', async () => {
    const r = await refusedExchange('OPTIONS * HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n');
    expectRefused(r.text, 501);
    expect(r.reached).toEqual([]);
  });

  it('a framing error in a body that trickles in after the head was forwarded: the upstream never gets a complete request', async () => {
    const before = arrivals.length;
    const r = await rawExchange(s.url, '', {
      drive: (socket) => {
        socket.write('POST /open/trickle HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n');
        setTimeout(() => socket.write('zz\r\nmore\r\n0\r\n\r\n'), 300);
      },
    });
    expect(r.closed).toBe(true);
    // The head may have reached the upstream (the body streams); its body never ends: the proxy aborted the exchange.
    const seen = arrivals.slice(before).map((a) => a.line);
    expect(seen.every((line) => line === 'POST /open/trickle')).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(completed).not.toContain('POST /open/trickle');
    // Nothing was answered yet (the upstream waits for the body's end): the client gets the 400.
    expectRefused(r.text, 400);
  });
});
