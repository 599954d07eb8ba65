import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, type Served } from './helpers.js';

/** Prometheus text format: `name{labels} value` samples by series. */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m === null) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

function otp(url: string, phone: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/otp/send`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ phone }) });
}

describe('ratecontract serve (no arguments but --port 0): the demo API', () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(['--port', '0', '--admin-port', '0']);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('takes a free port, prints it and the admin URL, the contract table and curl examples', async () => {
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(s.url).port)).toBeGreaterThan(0);
    expect(s.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const err = s.stderr();
    for (const name of ['otp-recipient', 'otp-tenant', 'otp-ip', 'otp-global', 'login-account', 'search-tenant', 'search-ip']) expect(err).toContain(name);
    expect(err).toMatch(/^GET \/health +none \(unlimited\)$/m);
    // The examples themselves are run, and held to their captions, by quick-start.test.ts and demo-orders.test.ts.
    expect(err).toContain(`${s.url}/otp/send`);
    expect(err).toMatch(/^try it /m);
    const startup = await s.waitForLog((l) => l.event === 'startup');
    expect(startup).toMatchObject({ url: s.url, adminUrl: s.adminUrl, mode: 'demo', limits: 8, routes: 4 });
    // One line per store, before startup.
    expect(s.logs.filter((l) => l.event === 'store').map((l) => l.store)).toEqual(['abuse', 'shared', '(default)']);
  });

  it('answers 429 with the exact Retry-After and, to an identified tenant, RateLimit fields and problem details', async () => {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await otp(s.url, '+15550111', { 'x-tenant': 'acme', 'x-forwarded-for': '203.0.113.1' });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([202, 202, 202, 429]);
    const r = last as Response;
    // gcra 3 per 15 min: one code per 5 min after the burst of 3.
    expect(r.headers.get('retry-after')).toBe('300');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(r.headers.get('ratelimit')).toMatch(/^"otp-recipient";r=0;t=300;pk=:[A-Za-z0-9+/=]+:$/);
    expect(r.headers.get('ratelimit-policy')).toMatch(/^"otp-recipient";q=3;w=900;pk=:[^:]+:, "otp-tenant";q=100;w=3600;pk=:[^:]+:, "otp-ip";q=10;w=900;pk=:[^:]+:$/);
    expect(await r.json()).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#quota-exceeded', status: 429, 'violated-policies': ['otp-recipient'] });
  });

  it('tells an anonymous caller only the status and Retry-After', async () => {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await otp(s.url, '+15550222', { 'x-forwarded-for': '203.0.113.2' });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([202, 202, 202, 429]);
    expect(last?.headers.get('retry-after')).toBe('300');
    expect(last?.headers.get('ratelimit')).toBeNull();
    expect(last?.headers.get('ratelimit-policy')).toBeNull();
  });

  it('answers 503 with Retry-After: 1 when the global send rate (50/s) is spent', async () => {
    // Distinct addresses (x-forwarded-for is believed from loopback) and recipients: only otp-global binds.
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 150 }, (_, i) => otp(s.url, `+1555900${String(i).padStart(4, '0')}`, { 'x-forwarded-for': `198.51.${Math.floor(i / 250)}.${i % 250}` })),
    );
    const rejected = answers.filter((a) => a.status === 503);
    // otp-global (gcra, 50/s, burst 50) admits at most 50 + 50/s x t in any t: the bound, over the time the 150 took
    // (however slow the machine), plus one for the interval's edges. Earlier tests in this file spent a few of the 50.
    const elapsedS = (performance.now() - started) / 1000;
    const admitted = answers.filter((a) => a.status === 202).length;
    expect(admitted).toBeGreaterThanOrEqual(40);
    expect(admitted).toBeLessThanOrEqual(50 + Math.ceil(50 * elapsedS) + 1);
    expect(rejected.length).toBeGreaterThan(0);
    expect(answers.every((a) => a.status === 202 || a.status === 503)).toBe(true);
    const one = rejected[0] as Response;
    expect(one.headers.get('retry-after')).toBe('1');
    expect(await one.json()).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity', status: 503 });
    for (const a of answers) if (a !== one) await a.body?.cancel();
  });

  it('leaves GET /health unlimited and answers 404 off the contract', async () => {
    const statuses = await Promise.all(Array.from({ length: 60 }, () => fetch(`${s.url}/health`).then((r) => r.status)));
    expect(new Set(statuses)).toEqual(new Set([200]));
    const r = await fetch(`${s.url}/nowhere`);
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
  });

  it('admin port: /healthz, /readyz, /contract, /metrics, /stats.json and the live page', async () => {
    const admin = s.adminUrl as string;
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    const ready = await fetch(`${admin}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ready: true, stores: { abuse: true, shared: true } });
    const contract = (await (await fetch(`${admin}/contract`)).json()) as { file: string; rows: Array<{ name: string; status: number; routes: string[] }> };
    expect(contract.file).toBe('(built-in demo)');
    expect(contract.rows.map((r) => r.name)).toEqual(['otp-recipient', 'otp-tenant', 'otp-ip', 'otp-global', 'login-account', 'login-ip', 'search-tenant', 'search-ip']);
    expect(contract.rows.find((r) => r.name === 'otp-global')).toMatchObject({ status: 503, routes: ['POST /otp/send'] });
    const m = await fetch(`${admin}/metrics`);
    expect(m.status).toBe(200);
    expect(m.headers.get('content-type')).toContain('text/plain');
    const samples = parseMetrics(await m.text());
    expect(samples.get('ratecontract_replicas')).toBe(1);
    const stats = await fetch(`${admin}/stats.json`);
    expect(stats.status).toBe(200);
    expect(await stats.json()).toBeTypeOf('object');
    const page = await fetch(`${admin}/`);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('stats.json');
    expect((await fetch(`${admin}/nope`)).status).toBe(404);
  });

  it('SIGTERM: stops and exits 0, with a stopped line', async () => {
    expect(await s.stop()).toBe(0);
    expect(s.logs.some((l) => l.event === 'stopped')).toBe(true);
    // No line per request by default.
    expect(s.logs.filter((l) => l.event !== 'store' && l.event !== 'startup' && l.event !== 'draining' && l.event !== 'stopped')).toEqual([]);
  });
});
