/**
 * Smoke test of `ratecontract rls`, in the everyday suite: the built command
 * spawned as a user runs it, on an envoyproxy/ratelimit config, asked over
 * gRPC (@grpc/grpc-js on the shipped protos) and over HTTP (/json). The
 * reference examples, Redis, reload and the rest are in
 * test/integration/rls, run by `npm run test:full`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configDir, d, startRls, type Rls } from '../integration/rls/helpers.js';

const CONFIG = `
domain: messaging
descriptors:
  - key: to_number
    rate_limit: { unit: day, requests_per_unit: 2, purpose: abuse, reason: SMS pumping to one number }
`;

describe('ratecontract rls, spawned', () => {
  let rls: Rls | undefined;
  beforeAll(async () => {
    rls = await startRls(['--config', configDir({ 'messaging.yaml': CONFIG })]);
  }, 30_000);
  afterAll(async () => {
    await rls?.stop();
  });

  it('is SERVING; over gRPC answers OK twice, then OVER_LIMIT; /json shares the counters; stops with exit 0 on SIGTERM', async () => {
    const r = rls as Rls;
    expect(await r.client.health()).toBe('SERVING');
    const codes: Array<string | undefined> = [];
    for (let i = 0; i < 3; i++) codes.push((await r.client.should({ domain: 'messaging', descriptors: [d('to_number=2061111111')] })).statuses[0]?.code);
    expect(codes).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    const first = await r.client.should({ domain: 'messaging', descriptors: [d('to_number=2062222222')] });
    expect(first.statuses[0]).toMatchObject({ code: 'OK', current_limit: { requests_per_unit: 2, unit: 'DAY' }, limit_remaining: 1 });
    // The HTTP face decides on the same counters: the number that gRPC spent one of is over after one more.
    const post = (): Promise<Response> => fetch(`${r.httpUrl}/json`, { method: 'POST', body: JSON.stringify({ domain: 'messaging', descriptors: [{ entries: [{ key: 'to_number', value: '2062222222' }] }] }) });
    const ok = await post();
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { overallCode: string }).overallCode).toBe('OK');
    const over = await post();
    expect(over.status).toBe(429);
    expect(((await over.json()) as { overallCode: string }).overallCode).toBe('OVER_LIMIT');
    expect(await r.stop()).toBe(0);
  });
});
