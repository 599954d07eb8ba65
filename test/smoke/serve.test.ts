/**
 * Smoke test of `ratecontract serve`, in the everyday suite: the built
 * command spawned as a user runs it, on the demo contract, over real HTTP.
 * A 429 with its exact signal, the admin port's metrics and readiness, and a
 * clean exit on SIGTERM. Everything else about serve (the proxy, Redis,
 * reload, drain, the demo's curl examples) is in test/integration/serve, run
 * by `npm run test:full`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, type Served } from '../integration/serve/helpers.js';

function otp(url: string, phone: string, ip: string): Promise<Response> {
  return fetch(`${url}/otp/send`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant': 'acme', 'x-forwarded-for': ip }, body: JSON.stringify({ phone }) });
}

describe('ratecontract serve, spawned: the demo API', () => {
  let s: Served | undefined;
  beforeAll(async () => {
    s = await serve(['--port', '0', '--admin-port', '0']);
  }, 30_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('answers 202 three times, then 429 with the exact Retry-After and problem details; counts both on /metrics; stops with exit 0 on SIGTERM', async () => {
    const served = s as Served;
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await otp(served.url, '+15550111', '203.0.113.1');
      statuses.push(last.status);
    }
    expect(statuses).toEqual([202, 202, 202, 429]);
    const r = last as Response;
    // gcra 3 per 15 min: one code per 5 min after the burst of 3.
    expect(r.headers.get('retry-after')).toBe('300');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(await r.json()).toMatchObject({ status: 429, 'violated-policies': ['otp-recipient'] });
    expect((await fetch(`${served.url}/health`)).status).toBe(200);

    const admin = served.adminUrl as string;
    expect((await fetch(`${admin}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    expect(metrics).toMatch(/^ratecontract_decisions_total\{limit="otp-recipient",outcome="rejected"\} 1$/m);
    expect(metrics).toMatch(/^ratecontract_decisions_total\{limit="otp-recipient",outcome="allowed"\} 3$/m);

    expect(await served.stop()).toBe(0);
    expect(served.logs.some((l) => l.event === 'startup')).toBe(true);
  });
});
