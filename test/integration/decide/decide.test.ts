/**
 * `ratecontract decide` spawned and asked over HTTP as the proxies ask it:
 * subrequests shaped exactly as Traefik's forwardAuth sends them (Traefik is
 * not packaged here, so no real Traefik runs), `--deny-status`, the client
 * address through a trusted proxy only (`X-Forwarded-For`, `X-Real-IP`),
 * the identity from the original request's fields, the limits refused at
 * load, the flags refused, and the host it shares with serve and rls
 * (`/contract`, `/metrics`, `/decide.json`, SIGHUP reload, SIGTERM drain).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnServer, type Served } from '../serve/helpers.js';

const CONTRACT = `stores:
  s: { type: memory }
limits:
  - name: login-ip
    purpose: abuse
    limit: 2
    window: 1m
    key: ip
    store: s
    reason: password spraying from one address
  - name: search-tenant
    purpose: shedding
    limit: 1
    window: 1m
    key: principal
    store: s
    reason: one tenant's share of search
routes:
  - match: POST /login
    limits: [login-ip]
  - match: GET /search
    limits: [search-tenant]
http:
  trustProxy: loopback
  advertise: always
  identify: { header: x-tenant }
`;

/** A subrequest as Traefik's forwardAuth sends it: GET to the address, the original fields, the X-Forwarded-* set. */
function traefik(url: string, method: string, uri: string, clientIp: string, extra: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/auth`, {
    method: 'GET',
    headers: {
      accept: '*/*',
      'user-agent': 'curl/7.88.1',
      'x-forwarded-for': clientIp,
      'x-forwarded-host': 'api.example',
      'x-forwarded-method': method,
      'x-forwarded-port': '443',
      'x-forwarded-proto': 'https',
      'x-forwarded-server': 'traefik-1',
      'x-forwarded-uri': uri,
      'x-real-ip': clientIp,
      ...extra,
    },
  });
}

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rc-decide-'));
});
afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

function contract(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

describe('decide, asked as Traefik forwardAuth asks', () => {
  let d: Served | undefined;
  let file = '';
  beforeAll(async () => {
    file = contract('traefik.yaml', CONTRACT);
    d = await spawnServer('decide', ['--config', file, '--port', '0', '--admin-port', '0']);
  }, 30_000);
  afterAll(async () => {
    await d?.stop();
  });

  it('allows with the RateLimit fields, then answers the 429 itself (Traefik passes it as is): exact Retry-After, RateLimit fields, problem+json', async () => {
    const url = (d as Served).url;
    const a = await traefik(url, 'POST', '/login?next=%2F', '203.0.113.5');
    expect(a.status).toBe(200);
    expect(a.headers.get('ratelimit')).toMatch(/^"login-ip";r=1;t=\d+/);
    expect(a.headers.get('ratelimit-policy')).toMatch(/^"login-ip";q=2;w=60/);
    expect((await traefik(url, 'POST', '/login', '203.0.113.5')).status).toBe(200);
    const denied = await traefik(url, 'POST', '/login', '203.0.113.5');
    expect(denied.status).toBe(429);
    expect(denied.headers.get('retry-after')).toBe('30');
    expect(denied.headers.get('ratelimit')).toMatch(/^"login-ip";r=0;t=30/);
    expect(denied.headers.get('ratecontract-status')).toBe('429');
    expect(denied.headers.get('content-type')).toBe('application/problem+json');
    expect(await denied.json()).toMatchObject({ status: 429, 'violated-policies': ['login-ip'] });
    // Another client address (from a trusted proxy) has its own budget.
    expect((await traefik(url, 'POST', '/login', '203.0.113.6')).status).toBe(200);
    // Another method on the same path matches no route: not limited.
    expect((await traefik(url, 'GET', '/login', '203.0.113.5')).status).toBe(200);
  });

  it('takes the identity from the original request\'s fields (a trusted proxy\'s x-tenant)', async () => {
    const url = (d as Served).url;
    expect((await traefik(url, 'GET', '/search?q=a', '203.0.113.7', { 'x-tenant': 'acme' })).status).toBe(200);
    expect((await traefik(url, 'GET', '/search?q=b', '203.0.113.8', { 'x-tenant': 'acme' })).status).toBe(429);
    expect((await traefik(url, 'GET', '/search?q=c', '203.0.113.7', { 'x-tenant': 'globex' })).status).toBe(200);
  });

  it('refuses a subrequest that names no original request, or two that disagree, with 400 and problem details', async () => {
    const url = (d as Served).url;
    const none = await fetch(`${url}/auth`);
    expect(none.status).toBe(400);
    expect(((await none.json()) as { detail: string }).detail).toContain('X-Forwarded-Method and X-Forwarded-Uri');
    const two = await traefik(url, 'POST', '/login', '203.0.113.9', { 'x-original-method': 'GET', 'x-original-uri': '/health' });
    expect(two.status).toBe(400);
  });

  it('shares the host: /contract, /metrics, /decide.json, a SIGHUP reload, and exit 0 on SIGTERM', async () => {
    const served = d as Served;
    const admin = served.adminUrl as string;
    expect(await (await fetch(`${admin}/contract`)).json()).toHaveProperty('rows');
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    expect(metrics).toMatch(/^ratecontract_decisions_total\{limit="login-ip",outcome="rejected"\} 1$/m);
    const counts = (await (await fetch(`${admin}/decide.json`)).json()) as Record<string, number>;
    expect(counts).toMatchObject({ denied: 2, unreadable: 2 });
    expect((await fetch(`${admin}/readyz`)).status).toBe(200);
    served.signal('SIGHUP');
    expect(await served.waitForLog((l) => l.event === 'reload')).toMatchObject({ ok: true, reason: 'SIGHUP', keptStores: expect.arrayContaining(['s']) as unknown });
    expect(await served.stop()).toBe(0);
    expect(served.logs.find((l) => l.event === 'startup')).toMatchObject({ mode: 'decide', limits: 2, routes: 2 });
  });
});

describe('decide --deny-status 403, X-Real-IP, and an untrusted peer', () => {
  it('answers a denial 403 with the contract\'s status in RateContract-Status and the exact Retry-After; X-Real-IP stands in for X-Forwarded-For', async () => {
    const file = contract('deny.yaml', CONTRACT);
    const d = await spawnServer('decide', ['--config', file, '--port', '0', '--admin-port', '0', '--deny-status', '403']);
    try {
      const ask = (ip: string): Promise<Response> => fetch(`${d.url}/`, { headers: { 'x-original-method': 'POST', 'x-original-uri': '/login', 'x-real-ip': ip } });
      expect((await ask('192.0.2.1')).status).toBe(200);
      expect((await ask('192.0.2.1')).status).toBe(200);
      const denied = await ask('192.0.2.1');
      expect(denied.status).toBe(403);
      expect(denied.headers.get('ratecontract-status')).toBe('429');
      expect(denied.headers.get('retry-after')).toBe('30');
      expect(denied.headers.get('ratelimit')).toMatch(/^"login-ip";r=0;t=30/);
      // No body (nginx would not reuse the connection for it), so no content type either.
      expect(denied.headers.get('content-length')).toBe('0');
      expect(denied.headers.has('content-type')).toBe(false);
      expect((await ask('192.0.2.2')).status).toBe(200);
    } finally {
      await d.stop();
    }
  });

  it('ignores X-Forwarded-For and X-Real-IP from a peer not in http.trustProxy: every client is the proxy', async () => {
    const file = contract('untrusted.yaml', CONTRACT.replace('  trustProxy: loopback\n', '').replace('  identify: { header: x-tenant }\n', ''));
    const d = await spawnServer('decide', ['--config', file, '--port', '0', '--admin-port', '0']);
    try {
      const ask = (ip: string): Promise<Response> => fetch(`${d.url}/`, { headers: { 'x-forwarded-method': 'POST', 'x-forwarded-uri': '/login', 'x-forwarded-for': ip, 'x-real-ip': ip } });
      expect((await ask('192.0.2.1')).status).toBe(200);
      expect((await ask('192.0.2.2')).status).toBe(200);
      expect((await ask('192.0.2.3')).status).toBe(429);
    } finally {
      await d.stop();
    }
  });
});

describe('decide refuses what it cannot honour, and bad flags', () => {
  const limit = (extra: string, key = 'ip'): string => `limits:
  - name: ok
    purpose: shedding
    limit: 10
    window: 1s
    key: ip
  - name: bad
    purpose: abuse
    limit: 2
    window: 1m
    key: ${key}
${extra}routes:
  - match: '* /x'
    limits: [ok, bad]
`;

  it.each([
    ['a concurrency lease', limit('    algorithm: concurrency\n'), /limits\[1\]: decide cannot honour limit "bad": a concurrency limit holds a lease until the answer ends/],
    ["count: 'failures'", limit('    count: failures\n'), /limits\[1\]: decide cannot honour limit "bad": count: 'failures' settles on the answer's status/],
    ['a body key', limit('', 'body.phone'), /limits\[1\]: decide cannot honour limit "bad": its key body.phone reads the body/],
  ])('refuses %s at load: exit 2, naming the file, the limit and why', async (_what, text, message) => {
    const file = contract(`refused-${String(Math.random()).slice(2)}.yaml`, text);
    const r = await runCli(['decide', '--config', file, '--port', '0', '--admin-port', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toMatch(message);
    // --emit refuses it too: a proxy config for a contract decide would not run.
    const e = await runCli(['decide', '--config', file, '--emit', 'nginx']);
    expect(e.code).toBe(2);
    expect(e.stderr).toMatch(message);
  });

  it('refuses to --emit a config for a contract that reads Forwarded (the configs set X-Forwarded-For), naming the path', async () => {
    const file = contract('forwarded.yaml', `${limit('')}http:\n  trustProxy: loopback\n  forwardedHeader: forwarded\n`);
    const r = await runCli(['decide', '--config', file, '--emit', 'caddy']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}: http.forwardedHeader: --emit writes configs that set X-Forwarded-For`);
  });

  it('refuses such a limit on a reload too, keeping the contract in force', async () => {
    const file = contract('reload.yaml', limit(''));
    const d = await spawnServer('decide', ['--config', file, '--port', '0', '--admin-port', '0']);
    try {
      writeFileSync(file, limit('    algorithm: concurrency\n'));
      d.signal('SIGHUP');
      const line = await d.waitForLog((l) => l.event === 'reload');
      expect(line).toMatchObject({ ok: false, reason: 'SIGHUP' });
      expect(String(line.error)).toMatch(/limits\[1\]: decide cannot honour limit "bad": a concurrency limit/);
      const r = await fetch(`${d.url}/`, { headers: { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/x' } });
      expect(r.status).toBe(200);
    } finally {
      await d.stop();
    }
  });

  it.each([
    [['--config', 'x.yaml', '--bogus'], /unknown option --bogus/i],
    [['--config', 'x.yaml', '--deny-status', '500'], /--deny-status must be 403 or 401/],
    [['--config', 'x.yaml', '--deny-status', '503'], /--deny-status must be 403 or 401/],
    [['--config', 'x.yaml', '--emit', 'nginx', '--listen', 'nowhere'], /--listen must be HOST:PORT/],
    [['--config', 'x.yaml', '--emit', 'apache'], /--emit must be one of nginx, caddy, haproxy, haproxy-lua/],
    [['--config', 'x.yaml', '--upstream', 'http://127.0.0.1:1'], /--upstream applies with --emit only/],
    [['--port', '0'], /decide needs --config FILE/],
  ])('refuses %j with exit 2 and the reason', async (args, message) => {
    const r = await runCli(['decide', ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});
