import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, type Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, upstreamServer, type Served } from './helpers.js';

const CONTRACT = `limits:
  - { name: per-ip, purpose: shedding, limit: 2, window: 1m, key: ip }
  - { name: per-user, purpose: abuse, limit: 2, window: 1m, key: body.user }
routes:
  - { match: GET /limited, limits: [per-ip] }
  - { match: POST /login, limits: [per-user] }
  - { match: GET /ws, limits: [per-ip] }
`;

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly bytes: number;
  readonly body: string;
}

/** Sends one request with node:http (which allows any header, hop-by-hop included) and reads the whole answer. */
function send(
  url: string,
  options: { method?: string; path: string; headers?: Record<string, string | string[]>; body?: Buffer | Readable | undefined },
): Promise<{ status: number; headers: IncomingHttpHeaders; trailers: NodeJS.Dict<string>; body: Buffer; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${options.path}`, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, body: Buffer.concat(chunks), res }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (options.body instanceof Readable) options.body.pipe(req);
    else req.end(options.body);
  });
}

/** `n` bytes in 64 KiB chunks, made as they are read. */
function generated(n: number): Readable {
  const chunk = Buffer.alloc(65536, 0x61);
  let left = n;
  return new Readable({
    read() {
      if (left <= 0) {
        this.push(null);
        return;
      }
      const k = Math.min(left, chunk.length);
      left -= k;
      this.push(k === chunk.length ? chunk : chunk.subarray(0, k));
    },
  });
}

/** Peak and current resident set of a process, bytes (Linux). */
function memory(pid: number): { hwm: number; rss: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  return { hwm: kb('VmHWM'), rss: kb('VmRSS') };
}

/** 200 MB each way runs in about 2 s here; the issue asks for at least 50 MB. */
const BIG = 200 * 1024 * 1024;

describe('ratecontract serve --upstream: the reverse proxy', () => {
  let dir: string;
  let up: Awaited<ReturnType<typeof upstreamServer>>;
  let s: Served;
  const seen: Seen[] = [];
  let slowArrived: (() => void) | undefined;
  let endlessClosed: (() => void) | undefined;
  const upgrades = new Set<Duplex>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rc-proxy-'));
    writeFileSync(join(dir, 'contract.yaml'), CONTRACT);
    up = await upstreamServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/slow') {
        slowArrived?.();
        return; // never answers
      }
      if (url.pathname === '/endless') {
        // A body that never ends; it stops only when the proxy lets go of this exchange.
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const timer = setInterval(() => res.write(Buffer.alloc(16384, 0x62)), 5);
        res.once('close', () => {
          clearInterval(timer);
          endlessClosed?.();
        });
        return;
      }
      if (url.pathname === '/big') {
        // Chunked (no content-length), with a trailer.
        const n = Number(url.searchParams.get('n'));
        res.writeHead(200, { 'content-type': 'application/octet-stream', trailer: 'x-checksum' });
        const src = generated(n);
        src.pipe(res, { end: false });
        src.on('end', () => {
          res.addTrailers({ 'x-checksum': `bytes=${n}` });
          res.end();
        });
        return;
      }
      let bytes = 0;
      const keep: Buffer[] = [];
      req.on('data', (c: Buffer) => {
        bytes += c.length;
        if (bytes <= 65536) keep.push(c);
      });
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, bytes, body: Buffer.concat(keep).toString() });
        const status = /^\/status\/(\d{3})$/.exec(url.pathname)?.[1];
        if (status !== undefined) {
          const code = Number(status);
          res.writeHead(code, code === 301 ? { location: '/elsewhere' } : {});
          res.end(code === 204 || code === 304 ? undefined : `status ${code}`);
          return;
        }
        if (url.pathname === '/hop') {
          res.setHeader('connection', 'x-up-hop');
          res.setHeader('x-up-hop', 'secret');
          res.setHeader('keep-alive', 'timeout=5');
          res.setHeader('set-cookie', ['a=1', 'b=2']);
          res.setHeader('x-end', 'kept');
        }
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ method: req.method, url: req.url, bytes }));
      });
    });
    up.server.on('upgrade', (req, socket) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, bytes: 0, body: '' });
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: upgrade\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(d.toString().toUpperCase()));
      // Upgraded sockets are half-open by default and outside closeAllConnections: end them with their peer.
      socket.on('end', () => socket.destroy());
      upgrades.add(socket);
    });
    s = await serve(['--config', join(dir, 'contract.yaml'), '--upstream', up.url, '--port', '0', '--admin-port', '0', '--upstream-timeout', '700ms']);
  });
  afterAll(async () => {
    expect(await s?.stop()).toBe(0);
    for (const u of upgrades) u.destroy();
    await up?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const last = (): Seen => seen[seen.length - 1] as Seen;

  it('passes every method, with its body, and the answer', async () => {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const hasBody = method !== 'GET' && method !== 'OPTIONS';
      const r = await send(s.url, { method, path: `/m?x=${method}`, headers: hasBody ? { 'content-type': 'text/plain', 'content-length': '5' } : {}, body: hasBody ? Buffer.from('hello') : undefined });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body.toString())).toEqual({ method, url: `/m?x=${method}`, bytes: hasBody ? 5 : 0 });
      expect(last()).toMatchObject({ method, url: `/m?x=${method}`, body: hasBody ? 'hello' : '' });
    }
    const head = await send(s.url, { method: 'HEAD', path: '/m' });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(last().method).toBe('HEAD');
  });

  it('drops hop-by-hop fields both ways (those named in Connection too) and sets the forwarding fields', async () => {
    const r = await send(s.url, {
      path: '/hop',
      headers: {
        connection: 'keep-alive, x-client-hop',
        'x-client-hop': 'secret',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        'proxy-connection': 'keep-alive',
        'x-custom': 'kept',
        'x-forwarded-for': '203.0.113.7',
        'x-forwarded-proto': 'https',
        host: 'api.example',
      },
    });
    expect(r.status).toBe(200);
    const h = last().headers;
    for (const name of ['x-client-hop', 'keep-alive', 'te', 'proxy-connection']) expect(h[name]).toBeUndefined();
    expect(h['x-custom']).toBe('kept');
    expect(h['x-forwarded-for']).toBe('203.0.113.7, 127.0.0.1');
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-host']).toBe('api.example');
    expect(h.host).toBe(new URL(up.url).host);
    expect(r.headers['x-up-hop']).toBeUndefined();
    expect(r.headers['x-end']).toBe('kept');
    expect(r.headers['set-cookie']).toEqual(['a=1', 'b=2']);
  });

  it('keeps the upstream status codes', async () => {
    for (const code of [201, 204, 301, 304, 404, 418, 500, 503]) {
      const r = await send(s.url, { path: `/status/${code}` });
      expect(r.status).toBe(code);
      if (code === 301) expect(r.headers.location).toBe('/elsewhere');
      if (code === 204 || code === 304) expect(r.body.length).toBe(0);
    }
  });

  it('streams a chunked request body, and a chunked answer with its trailer', async () => {
    const body = Readable.from([Buffer.from('one,'), Buffer.from('two,'), Buffer.from('three')]);
    const r = await send(s.url, { method: 'POST', path: '/chunks', body });
    expect(JSON.parse(r.body.toString())).toMatchObject({ bytes: 13 });
    expect(last().body).toBe('one,two,three');
    const big = await send(s.url, { path: '/big?n=100000' });
    expect(big.headers['transfer-encoding']).toBe('chunked');
    expect(big.body.length).toBe(100000);
    expect(big.trailers['x-checksum']).toBe('bytes=100000');
  });

  it(`streams ${BIG / 2 ** 20} MB each way without holding it (bounded proxy memory)`, async () => {
    const pid = (await s.waitForLog((l) => l.event === 'startup')).pid as number;
    const before = memory(pid);
    const upload = await send(s.url, { method: 'POST', path: '/upload', headers: { 'content-type': 'application/octet-stream', 'content-length': String(BIG) }, body: generated(BIG) });
    expect(JSON.parse(upload.body.toString())).toMatchObject({ bytes: BIG });
    let received = 0;
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${s.url}/big?n=${BIG}`, { agent: false }, (res) => {
        res.on('data', (c: Buffer) => (received += c.length));
        res.on('end', resolve);
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
    expect(received).toBe(BIG);
    const after = memory(pid);
    // Peak resident memory grew by far less than one body (what is left is garbage V8 collects past its 64 MB external-memory step).
    expect(after.hwm - before.rss).toBeLessThan(BIG / 2);
  });

  it('lets go of the upstream exchange when the client hangs up mid-answer', async () => {
    const closed = new Promise<void>((resolve) => (endlessClosed = resolve));
    let got = 0;
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${s.url}/endless`, { agent: false }, (res) => {
        res.on('data', (c: Buffer) => {
          got += c.length;
          if (got >= 65536) {
            res.destroy();
            resolve();
          }
        });
      });
      req.on('error', reject);
      req.end();
    });
    expect(got).toBeGreaterThanOrEqual(65536);
    // The upstream sees its response closed: the proxy aborted the exchange rather than reading on for nobody.
    const outcome = await Promise.race([closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still streaming'), 5000))]);
    expect(outcome).toBe('closed');
    // The proxy goes on serving.
    expect((await send(s.url, { path: '/status/201' })).status).toBe(201);
  });

  it('passes an Upgrade through as a raw tunnel', async () => {
    const port = Number(new URL(s.url).port);
    const sock = connect(port, '127.0.0.1');
    await once(sock, 'connect');
    sock.write('GET /ws HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\n');
    let text = '';
    await new Promise<void>((resolve) => {
      sock.on('data', (d: Buffer) => {
        text += d.toString();
        if (text.includes('\r\n\r\n')) resolve();
      });
    });
    expect(text.startsWith('HTTP/1.1 101 Switching Protocols')).toBe(true);
    expect(last()).toMatchObject({ url: '/ws' });
    expect(last().headers.upgrade).toBe('echo');
    text = '';
    sock.write('ping');
    await new Promise<void>((resolve) => {
      sock.on('data', () => {
        if (text.includes('PING')) resolve();
      });
    });
    expect(text).toBe('PING');
    sock.destroy();
  });

  it('answers a rejected request itself (the full client contract); it never reaches the upstream', async () => {
    const before = seen.filter((x) => x.url === '/limited').length;
    const statuses: number[] = [];
    let last429: Awaited<ReturnType<typeof send>> | undefined;
    for (let i = 0; i < 4; i++) {
      const r = await send(s.url, { path: '/limited' });
      statuses.push(r.status);
      if (r.status === 429) last429 = r;
    }
    // The upgrade above spent one of the two.
    expect(statuses).toEqual([200, 429, 429, 429]);
    expect(seen.filter((x) => x.url === '/limited').length - before).toBe(1);
    expect(last429?.headers['retry-after']).toMatch(/^(29|30)$/);
    expect(last429?.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(last429?.body.toString() ?? '{}')).toMatchObject({ status: 429 });
    // A rejected upgrade too.
    const port = Number(new URL(s.url).port);
    const sock = connect(port, '127.0.0.1');
    await once(sock, 'connect');
    sock.write('GET /ws HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\n');
    let text = '';
    sock.on('data', (d: Buffer) => (text += d.toString()));
    await once(sock, 'close');
    expect(text.startsWith('HTTP/1.1 429')).toBe(true);
    expect(text.toLowerCase()).toContain('retry-after:');
  });

  it('forwards the JSON body a body.* limit read, and rejects the third for that user', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await send(s.url, { method: 'POST', path: '/login', headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ user: 'ann', n: i })) });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([200, 200, 429]);
    const logins = seen.filter((x) => x.url === '/login');
    expect(logins.map((x) => JSON.parse(x.body) as unknown)).toEqual([
      { user: 'ann', n: 0 },
      { user: 'ann', n: 1 },
    ]);
    expect(logins[0]?.headers['content-length']).toBe(String(JSON.stringify({ user: 'ann', n: 0 }).length));
  });

  it('answers 504 with problem details when the upstream does not answer in time', async () => {
    const arrived = new Promise<void>((resolve) => (slowArrived = resolve));
    const r = await send(s.url, { path: '/slow' });
    await arrived;
    expect(r.status).toBe(504);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(r.body.toString())).toMatchObject({ status: 504 });
  });
});

describe('ratecontract serve --upstream with the upstream down', () => {
  it('answers 502 with problem details', async () => {
    const gone = await upstreamServer(() => undefined);
    const url = gone.url;
    await gone.close();
    const s = await serve(['--upstream', url, '--port', '0', '--admin-port', '0']);
    try {
      const r = await fetch(`${s.url}/health`);
      expect(r.status).toBe(502);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(await r.json()).toMatchObject({ status: 502, title: 'Bad Gateway' });
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });
});
