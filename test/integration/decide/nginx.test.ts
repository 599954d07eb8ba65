/**
 * `ratecontract decide` behind Debian's nginx (`auth_request`), with the
 * config `decide --emit nginx` writes: a 429 with the exact Retry-After and
 * the RateLimit fields reaches the client, allowed answers carry the
 * RateLimit fields, the upstream never sees a rejected request, nginx keeps
 * its connections to decide alive, and with decide killed under traffic the
 * abuse route answers 503 while the shedding route passes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Served } from '../serve/helpers.js';
import { CONTRACT, emit, freePort, NGINX, runsWith, startDecide, startNginx, startUpstream, sharedCases, type Proxy, type Upstream } from './proxies.js';

describe.skipIf(!runsWith(NGINX, 'nginx'))('decide behind nginx auth_request (--emit nginx, --deny-status 403)', () => {
  let dir = '';
  let upstream: Upstream | undefined;
  let decide: Served | undefined;
  let nginx: Proxy | undefined;
  let config = '';
  let emitted = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rc-decide-nginx-'));
    config = join(dir, 'ratecontract.yaml');
    writeFileSync(config, CONTRACT);
    upstream = await startUpstream();
    const decidePort = await freePort();
    const listenPort = await freePort();
    emitted = await emit('nginx', config, decidePort, upstream.port, listenPort);
    decide = await startDecide(config, decidePort, ['--deny-status', '403']);
    nginx = await startNginx(join(dir, 'nginx'), emitted, listenPort);
  }, 60_000);

  afterAll(async () => {
    await nginx?.stop();
    await decide?.stop();
    await upstream?.close();
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('writes each route with its fail mode, purpose and reason as comments', () => {
    expect(emitted).toContain('# POST /login: 503 while decide is unreachable (fails closed)');
    expect(emitted).toContain('#   login-ip: abuse, onError closed: password spraying from one address');
    expect(emitted).toContain('"~^POST /login/?$" deny;');
    expect(emitted).toContain('#   search-ip: shedding, onError degraded: search is CPU-bound; each address gets a share');
    expect(emitted).toContain('"~^(GET|HEAD) /search/?$" pass;');
  });

  it('allows with the RateLimit fields, then answers 429 with the exact Retry-After and RateLimit fields; the upstream sees only the allowed', async () => {
    const n = nginx as Proxy;
    const up = upstream as Upstream;
    const before = up.seen.filter((s) => s.url === '/login').length;
    const answers: Response[] = [];
    for (let i = 0; i < 3; i++) answers.push(await fetch(`${n.url}/login`, { method: 'POST', body: 'user=a' }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(await answers[0]?.text()).toBe('upstream POST /login');
    expect(answers[0]?.headers.get('ratelimit')).toMatch(/^"login-ip";r=1;t=\d+/);
    expect(answers[0]?.headers.get('ratelimit-policy')).toMatch(/^"login-ip";q=2;w=60/);
    const denied = answers[2] as Response;
    // gcra 2 per minute, a burst of 2: the next request fits in 30 s.
    expect(denied.headers.get('retry-after')).toBe('30');
    expect(denied.headers.get('ratelimit')).toMatch(/^"login-ip";r=0;t=30/);
    expect(denied.headers.get('ratelimit-policy')).toMatch(/^"login-ip";q=2;w=60/);
    expect(denied.headers.get('content-type')).toBe('application/problem+json');
    expect(await denied.json()).toMatchObject({ status: 429 });
    expect(up.seen.filter((s) => s.url === '/login').length - before).toBe(2);
    // The body of the allowed requests reached the upstream; nothing of the rejected one did.
  });

  it('adds no empty RateLimit field when decide told nothing, and a client cannot name another route in X-Forwarded-Uri', async () => {
    const n = nginx as Proxy;
    const health = await fetch(`${n.url}/health`);
    expect(health.status).toBe(200);
    expect(health.headers.has('ratelimit')).toBe(false);
    // login-ip is spent for 127.0.0.1 (the test above): claiming the unlimited /health does not pass.
    const spoofed = await fetch(`${n.url}/login`, { method: 'POST', headers: { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/health' } });
    expect(spoofed.status).toBe(429);
  });

  it("a client cannot choose its address: its own X-Forwarded-For and X-Real-IP are replaced by the proxy's", async () => {
    // login-ip is spent for 127.0.0.1 (the test above).
    const spoofed = await fetch(`${(nginx as Proxy).url}/login`, { method: 'POST', headers: { 'x-forwarded-for': '198.51.100.99', 'x-real-ip': '198.51.100.98' } });
    expect(spoofed.status).toBe(429);
  });

  sharedCases(() => ({ proxy: nginx as Proxy, decide: decide as Served, upstream: upstream as Upstream }), { denials: 10 });
});
