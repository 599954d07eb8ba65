/**
 * `ratecontract decide` behind Debian's HAProxy 2.6 (a Lua action with
 * HAProxy's httpclient), with the config and Lua `decide --emit haproxy`
 * and `--emit haproxy-lua` write: the 429 rebuilt with decide's exact
 * Retry-After and RateLimit fields reaches the client, allowed answers carry
 * the RateLimit fields, the upstream never sees a rejected request, and with
 * decide killed under traffic the abuse route answers 503 while the
 * shedding route passes, at once (the config sets no retry of a refused
 * connection), and HAProxy's httpclient keeps its connection to decide.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Served } from '../serve/helpers.js';
import { CONTRACT, emit, freePort, HAPROXY, runsWith, startDecide, startHaproxy, startUpstream, sharedCases, type Proxy, type Upstream } from './proxies.js';

describe.skipIf(!runsWith(HAPROXY, 'HAProxy'))('decide behind HAProxy with a Lua action (--emit haproxy, --emit haproxy-lua)', () => {
  let dir = '';
  let upstream: Upstream | undefined;
  let decide: Served | undefined;
  let haproxy: Proxy | undefined;
  let config = '';
  let emitted = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rc-decide-haproxy-'));
    config = join(dir, 'ratecontract.yaml');
    writeFileSync(config, CONTRACT);
    upstream = await startUpstream();
    const decidePort = await freePort();
    const listenPort = await freePort();
    emitted = await emit('haproxy', config, decidePort, upstream.port, listenPort);
    const lua = await emit('haproxy-lua', config, decidePort, upstream.port, listenPort);
    decide = await startDecide(config, decidePort);
    haproxy = await startHaproxy(join(dir, 'haproxy'), emitted, lua, listenPort);
  }, 60_000);

  afterAll(async () => {
    await haproxy?.stop();
    await decide?.stop();
    await upstream?.close();
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('writes each route with its fail mode, purpose and reason as comments', () => {
    expect(emitted).toContain('# POST /login: 503 while decide is unreachable (fails closed)');
    expect(emitted).toContain('#   login-ip: abuse, onError closed: password spraying from one address');
    expect(emitted).toContain('http-request set-var(txn.rc_unreachable) str(deny) if { method POST } { path_reg ^/login/?$ }');
    expect(emitted).toContain('#   search-ip: shedding, onError degraded: search is CPU-bound; each address gets a share');
    expect(emitted).toContain('http-request set-var(txn.rc_unreachable) str(pass) if { method GET HEAD } { path_reg ^/search/?$ }');
  });

  it('allows with the RateLimit fields, then answers 429 with the exact Retry-After and RateLimit fields; the upstream sees only the allowed', async () => {
    const n = haproxy as Proxy;
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
    expect(denied.headers.get('cache-control')).toBe('no-store');
    expect(await denied.json()).toMatchObject({ status: 429 });
    expect(up.seen.filter((s) => s.url === '/login').length - before).toBe(2);
    // The body of the allowed requests reached the upstream; nothing of the rejected one did.
  });

  sharedCases(() => ({ proxy: haproxy as Proxy, decide: decide as Served, upstream: upstream as Upstream }), { unlimitedRoute: true });
});
