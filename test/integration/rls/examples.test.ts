/**
 * `ratecontract rls` against envoyproxy/ratelimit's documented examples, one
 * test each, over gRPC from @grpc/grpc-js (spawned service, memory store).
 * Units are hours and days where counts must be exact, so no window rolls
 * over during a test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configDir, d, resetMs, startRls, type Rls, type Status } from './helpers.js';

const FILES = {
  'ex1.yaml': `
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit: { unit: hour, requests_per_unit: 2 }
  - key: database
    value: default
    rate_limit: { unit: hour, requests_per_unit: 500 }
`,
  'ex2.yaml': `
domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit: { unit: day, requests_per_unit: 2 }
  - key: to_number
    rate_limit: { unit: day, requests_per_unit: 3 }
`,
  'ex3.yaml': `
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit: { unit: hour, requests_per_unit: 10 }
  - key: remote_address
    value: 50.0.0.5
    rate_limit: { unit: second, requests_per_unit: 0 }
`,
  'ex4.yaml': `
domain: example4
descriptors:
  - key: key
    value: value
    rate_limit: { requests_per_unit: 300, unit: second }
  - key: other
    value: value
    descriptors:
      - key: subkey
        rate_limit: { requests_per_unit: 300, unit: hour }
`,
  'ex5.yaml': `
domain: internal
descriptors:
  - key: ldap
    rate_limit: { unlimited: true }
  - key: azure
    rate_limit: { unit: minute, requests_per_unit: 100 }
`,
  'ex6.yaml': `
domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit: { requests_per_unit: 2, unit: hour }
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit: { requests_per_unit: 2, unit: hour }
`,
  'ex7.yaml': `
domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit: { name: specific_limit, requests_per_unit: 5, unit: hour }
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: hour
`,
  'ex9.yaml': `
domain: example9
descriptors:
  - key: key1
    value: value*
    rate_limit: { unit: hour, requests_per_unit: 20 }
  - key: path
    value: /api/*/action
    rate_limit: { unit: hour, requests_per_unit: 21 }
  - key: route
    value: /api/*/resource/*/action
    rate_limit: { unit: hour, requests_per_unit: 22 }
`,
  'ex11.yaml': `
domain: example11
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 10 }
  - key: files_no_share
    value: files_no_share/*
    rate_limit: { unit: hour, requests_per_unit: 10 }
`,
  'algorithms.yaml': `
domain: algorithms
descriptors:
  - key: gcra
    rate_limit: { unit: hour, requests_per_unit: 10, algorithm: gcra, purpose: shedding, onError: degraded }
  - key: bucket
    rate_limit: { unit: hour, requests_per_unit: 60, algorithm: token-bucket, burst: 5, purpose: abuse }
  - key: sliding
    rate_limit: { unit: hour, requests_per_unit: 4, algorithm: sliding-window, purpose: shedding, reason: protects the search backend }
  - key: cost
    rate_limit: { unit: day, requests_per_unit: 10 }
`,
};

let rls: Rls;
beforeAll(async () => {
  rls = await startRls(['--config', configDir(FILES), '--response-headers']);
});
afterAll(async () => {
  expect(await rls.stop()).toBe(0);
});

const HOUR = 3_600_000;

describe('the reference examples', () => {
  it('example 1: a key and value each get their own limit; the third call of 2 per hour is over', async () => {
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await rls.client.should({ domain: 'mongo_cps', descriptors: [d('database=users')] })).statuses[0]?.code);
    expect(codes).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    const other = await rls.client.should({ domain: 'mongo_cps', descriptors: [d('database=default')] });
    expect(other.statuses[0]).toMatchObject({ code: 'OK', current_limit: { requests_per_unit: 500, unit: 'HOUR' }, limit_remaining: 499 });
  });

  it('example 2: nested descriptors, several descriptors in one call, OVER_LIMIT when any is over', async () => {
    const call = () => rls.client.should({ domain: 'messaging', descriptors: [d('message_type=marketing', 'to_number=2061111111'), d('to_number=2061111111')] });
    const a = await call();
    expect(a.overall_code).toBe('OK');
    expect(a.statuses.map((s) => s.limit_remaining)).toEqual([1, 2]);
    await call();
    const c = await call();
    expect(c.overall_code).toBe('OVER_LIMIT');
    expect(c.statuses.map((s) => s.code)).toEqual(['OVER_LIMIT', 'OK']);
    // Another number has its own counters.
    expect((await rls.client.should({ domain: 'messaging', descriptors: [d('to_number=2062222222')] })).statuses[0]?.limit_remaining).toBe(2);
  });

  it('example 3: key and value beat key alone; requests_per_unit 0 blocks', async () => {
    const any = await rls.client.should({ domain: 'edge_proxy_per_ip', descriptors: [d('remote_address=50.0.0.1')] });
    expect(any.statuses[0]).toMatchObject({ code: 'OK', current_limit: { requests_per_unit: 10, unit: 'HOUR' }, limit_remaining: 9 });
    const blocked = await rls.client.should({ domain: 'edge_proxy_per_ip', descriptors: [d('remote_address=50.0.0.5')] });
    expect(blocked.overall_code).toBe('OVER_LIMIT');
    expect(blocked.statuses[0]).toMatchObject({ code: 'OVER_LIMIT', current_limit: { requests_per_unit: 0, unit: 'SECOND' }, limit_remaining: 0 });
    const reset = resetMs(blocked.statuses[0]!) as number;
    expect(reset).toBeGreaterThan(0);
    expect(reset).toBeLessThanOrEqual(1000);
  });

  it('example 4: a descriptor of N entries matches only a rule at depth N', async () => {
    const deeper = await rls.client.should({ domain: 'example4', descriptors: [d('key=value', 'subkey=subvalue')] });
    expect(deeper.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 0 });
    expect(deeper.statuses[0]?.current_limit ?? undefined).toBeUndefined();
    const nested = await rls.client.should({ domain: 'example4', descriptors: [d('other=value', 'subkey=subvalue')] });
    expect(nested.statuses[0]).toMatchObject({ code: 'OK', current_limit: { requests_per_unit: 300, unit: 'HOUR' }, limit_remaining: 299 });
    const shallow = await rls.client.should({ domain: 'example4', descriptors: [d('other=value')] });
    expect(shallow.statuses[0]?.current_limit ?? undefined).toBeUndefined();
  });

  it('example 5: unlimited answers OK with limit_remaining MaxUint32 and no limit', async () => {
    const r = await rls.client.should({ domain: 'internal', descriptors: [d('ldap=anything'), d('azure=x')] });
    expect(r.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 4294967295 });
    expect(r.statuses[0]?.current_limit ?? undefined).toBeUndefined();
    expect(r.statuses[1]).toMatchObject({ code: 'OK', current_limit: { requests_per_unit: 100, unit: 'MINUTE' } });
  });

  it('example 6: shadow_mode answers OK past the limit; the sibling rule enforces', async () => {
    const a = [];
    const b = [];
    for (let i = 0; i < 3; i++) {
      a.push((await rls.client.should({ domain: 'example6', descriptors: [d('service=auth-service', 'user=user-a')] })).overall_code);
      b.push((await rls.client.should({ domain: 'example6', descriptors: [d('service=auth-service', 'user=user-b')] })).overall_code);
    }
    expect(a).toEqual(['OK', 'OK', 'OK']);
    expect(b).toEqual(['OK', 'OK', 'OVER_LIMIT']);
  });

  it('example 7: replaces skips the named rule in the same request, and only there', async () => {
    const both = await rls.client.should({ domain: 'example7', descriptors: [d('key_1=value_1', 'user=bkthomps'), d('key_2=value_2', 'user=bkthomps')] });
    expect(both.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 0 });
    expect(both.statuses[0]?.current_limit ?? undefined).toBeUndefined();
    expect(both.statuses[1]).toMatchObject({ code: 'OK', current_limit: { requests_per_unit: 10 }, limit_remaining: 9 });
    // Alone, the replaced rule applies (and was not counted by the call above).
    const alone = await rls.client.should({ domain: 'example7', descriptors: [d('key_1=value_1', 'user=bkthomps')] });
    expect(alone.statuses[0]).toMatchObject({ current_limit: { requests_per_unit: 5, name: 'specific_limit' }, limit_remaining: 4 });
  });

  it('example 9: wildcards as a prefix, in the middle and several times', async () => {
    const r = await rls.client.should({
      domain: 'example9',
      descriptors: [d('key1=valueXYZ'), d('path=/api/123/action'), d('path=/api/123/other'), d('route=/api/v1/resource/9/action'), d('key1=other')],
    });
    expect(r.statuses.map((s) => s.current_limit?.requests_per_unit ?? null)).toEqual([20, 21, null, 22, null]);
  });

  it('example 11: share_threshold makes every wildcard match share one counter', async () => {
    await rls.client.should({ domain: 'example11', descriptors: [d('files=files/a'), d('files_no_share=files_no_share/a')] });
    const r = await rls.client.should({ domain: 'example11', descriptors: [d('files=files/b'), d('files_no_share=files_no_share/b')] });
    expect(r.statuses.map((s) => s.limit_remaining)).toEqual([8, 9]);
  });

  it('an unknown domain answers OK for every descriptor', async () => {
    const r = await rls.client.should({ domain: 'nowhere', descriptors: [d('a=b'), d('c')] });
    expect(r.overall_code).toBe('OK');
    expect(r.statuses.map((s) => s.code)).toEqual(['OK', 'OK']);
  });
});

describe('the protocol', () => {
  it('hits_addend is the cost: per request, and per descriptor over it', async () => {
    const r = await rls.client.should({ domain: 'algorithms', hits_addend: 3, descriptors: [d('cost=a'), { ...d('cost=b'), hits_addend: { value: 7 } }] });
    expect(r.statuses.map((s) => s.limit_remaining)).toEqual([7, 3]);
    const over = await rls.client.should({ domain: 'algorithms', hits_addend: 4, descriptors: [d('cost=b')] });
    expect(over.statuses[0]?.code).toBe('OVER_LIMIT');
    // A rejected call consumes nothing: 3 still fit.
    expect((await rls.client.should({ domain: 'algorithms', hits_addend: 3, descriptors: [d('cost=b')] })).statuses[0]?.code).toBe('OK');
  });

  it("honours the per-request limit override, matched rule or not, in the domain's counters", async () => {
    const o = { requests_per_unit: 2, unit: 'HOUR' };
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await rls.client.should({ domain: 'internal', descriptors: [{ ...d('tenant=acme'), limit: o }] })).statuses[0]);
    expect(codes.map((s) => s?.code)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    expect(codes[0]).toMatchObject({ current_limit: { requests_per_unit: 2, unit: 'HOUR' }, limit_remaining: 1 });
    // On a matched rule too (azure: 100 per minute in the file).
    const over = await rls.client.should({ domain: 'internal', descriptors: [{ ...d('azure=y'), limit: { requests_per_unit: 1, unit: 'DAY' } }] });
    expect(over.statuses[0]).toMatchObject({ code: 'OK', current_limit: { requests_per_unit: 1, unit: 'DAY' }, limit_remaining: 0 });
  });

  it('gcra through the protocol: exact remaining, reset = the time to a full burst', async () => {
    const t0 = Date.now();
    const seen: Status[] = [];
    for (let i = 0; i < 3; i++) seen.push((await rls.client.should({ domain: 'algorithms', descriptors: [d('gcra=k')] })).statuses[0]!);
    const last = seen[2] as Status;
    const elapsed = Date.now() - t0;
    // 10 per hour: one every 6 minutes; 3 taken at once leave 7, and the burst is full again 18 minutes after the first.
    expect(last).toMatchObject({ code: 'OK', current_limit: { requests_per_unit: 10, unit: 'HOUR' }, limit_remaining: 7 });
    const reset = resetMs(last) as number;
    expect(reset).toBeLessThanOrEqual((3 * HOUR) / 10);
    expect(reset).toBeGreaterThanOrEqual((3 * HOUR) / 10 - elapsed - 1);
  });

  it('token bucket through the protocol: the burst, then one per refill interval; reset is exact', async () => {
    const t0 = Date.now();
    const s = [];
    for (let i = 0; i < 6; i++) s.push((await rls.client.should({ domain: 'algorithms', descriptors: [d('bucket=k')] })).statuses[0]!);
    const elapsed = Date.now() - t0;
    expect(s.map((x) => x.code)).toEqual(['OK', 'OK', 'OK', 'OK', 'OK', 'OVER_LIMIT']);
    expect(s.map((x) => x.limit_remaining)).toEqual([4, 3, 2, 1, 0, 0]);
    // 60 per hour refills one token a minute: the over-limit answer's reset is the wait for the next token.
    const wait = resetMs(s[5]!) as number;
    expect(wait).toBeLessThanOrEqual(60_000);
    expect(wait).toBeGreaterThanOrEqual(60_000 - elapsed - 1);
  });

  it('sliding window through the protocol: N per window, then over limit', async () => {
    const s = [];
    for (let i = 0; i < 5; i++) s.push((await rls.client.should({ domain: 'algorithms', descriptors: [d('sliding=k')] })).statuses[0]!);
    expect(s.map((x) => x.code)).toEqual(['OK', 'OK', 'OK', 'OK', 'OVER_LIMIT']);
    expect(s.map((x) => x.limit_remaining)).toEqual([3, 2, 1, 0, 0]);
    const wait = resetMs(s[4]!) as number;
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(2 * HOUR);
  });

  it('response_headers_to_add carries RateLimit-Policy, RateLimit and Retry-After', async () => {
    await rls.client.should({ domain: 'algorithms', descriptors: [d('cost=h')], hits_addend: 10 });
    const r = await rls.client.should({ domain: 'algorithms', descriptors: [d('cost=h'), d('gcra=h')] });
    const headers = Object.fromEntries(r.response_headers_to_add.map((h) => [h.key, h.value]));
    expect(headers['RateLimit-Policy']).toBe('"algorithms_cost";q=10;w=86400, "algorithms_gcra";q=10;w=3600');
    expect(headers.RateLimit).toMatch(/^"algorithms_cost";r=0;t=\d+, "algorithms_gcra";r=9;t=360$/);
    expect(Number(headers['Retry-After'])).toBe(Number(/"algorithms_cost";r=0;t=(\d+)/.exec(headers.RateLimit ?? '')?.[1]));
  });
});

describe('malformed requests, answered as the reference does', () => {
  it('an empty domain or no descriptors: a gRPC error with the reference message', async () => {
    await expect(rls.client.should({ domain: '', descriptors: [d('a=b')] })).rejects.toMatchObject({ code: 2, details: 'rate limit domain must not be empty' });
    await expect(rls.client.should({ domain: 'mongo_cps', descriptors: [] })).rejects.toMatchObject({ code: 2, details: 'rate limit descriptor list must not be empty' });
  });

  it('an entry without a key matches nothing: OK; a descriptor without entries too', async () => {
    const r = await rls.client.should({ domain: 'mongo_cps', descriptors: [{ entries: [{ key: '', value: 'users' }] }, { entries: [] }] });
    expect(r.statuses.map((s) => [s.code, s.current_limit ?? undefined])).toEqual([
      ['OK', undefined],
      ['OK', undefined],
    ]);
  });

  it('huge descriptors are answered, and the service keeps serving', async () => {
    const many = await rls.client.should({ domain: 'mongo_cps', descriptors: Array.from({ length: 20_000 }, (_, i) => d(`k=${i}`)) }, 20_000);
    expect(many.statuses).toHaveLength(20_000);
    const deep = await rls.client.should({ domain: 'messaging', descriptors: [{ entries: Array.from({ length: 20_000 }, (_, i) => ({ key: 'to_number', value: String(i) })) }] }, 20_000);
    expect(deep.statuses[0]?.code).toBe('OK');
    const long = await rls.client.should({ domain: 'messaging', descriptors: [d(`to_number=${'9'.repeat(1_000_000)}`)] }, 20_000);
    expect(long.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 2 });
    expect((await rls.client.should({ domain: 'mongo_cps', descriptors: [d('database=default')] })).overall_code).toBe('OK');
  });
});

describe('HTTP and health', () => {
  it('POST /json answers proto3 JSON with 200 or 429; bad JSON is 400; GET /healthcheck is 200', async () => {
    const post = (body: string) => fetch(`${rls.httpUrl}/json`, { method: 'POST', body });
    const ok = await post(JSON.stringify({ domain: 'messaging', descriptors: [{ entries: [{ key: 'to_number', value: 'json-1' }] }], hitsAddend: 2 }));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ overallCode: 'OK', statuses: [{ code: 'OK', currentLimit: { requestsPerUnit: 3, unit: 'DAY' }, limitRemaining: 1, durationUntilReset: expect.stringMatching(/^\d+(\.\d{3})?s$/) as unknown }], responseHeadersToAdd: expect.any(Array) as unknown });
    const over = await post(JSON.stringify({ domain: 'messaging', descriptors: [{ entries: [{ key: 'to_number', value: 'json-1' }] }], hits_addend: 2 }));
    expect(over.status).toBe(429);
    expect(((await over.json()) as { overallCode: string }).overallCode).toBe('OVER_LIMIT');
    expect((await post('{not json')).status).toBe(400);
    expect((await post(JSON.stringify({ domain: '', descriptors: [] }))).status).toBe(400);
    const health = await fetch(`${rls.httpUrl}/healthcheck`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe('OK');
  });

  it('grpc.health.v1: SERVING for the server and the service, NOT_FOUND for another', async () => {
    expect(await rls.client.health('')).toBe('SERVING');
    expect(await rls.client.health('envoy.service.ratelimit.v3.RateLimitService')).toBe('SERVING');
    await expect(rls.client.health('other.Service')).rejects.toMatchObject({ code: 5 });
  });

  it('the admin port: /metrics with the rules and the rls counters, /contract with each fail mode', async () => {
    const metrics = await (await fetch(`${rls.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/ratecontract_rls_requests_total\{code="over_limit"\} [1-9]/);
    expect(metrics).toMatch(/ratecontract_rls_descriptors_total\{result="shadow"\} 1/);
    expect(metrics).toMatch(/ratecontract_rls_domain_not_found_total [1-9]/);
    expect(metrics).toContain('limit="algorithms_gcra"');
    // The contract document of docs/metrics.md, the shape `serve` answers too (and its admin page reads): rows and findings.
    const contract = (await (await fetch(`${rls.adminUrl}/contract`)).json()) as {
      rows: Array<{ path: string; onError?: string; purpose: string }>;
      findings: Array<{ code: string; severity: string; subject: string; message: string }>;
    };
    expect(Object.keys(contract)).toEqual(['files', 'domains', 'rows', 'findings']);
    expect(contract.rows.find((r) => r.path === 'algorithms.bucket')).toMatchObject({ purpose: 'abuse', onError: 'closed' });
    expect(contract.rows.find((r) => r.path === 'mongo_cps.database_users')).toMatchObject({ purpose: 'shedding (not stated)', onError: 'degraded' });
    expect(contract.findings.find((f) => f.subject.endsWith('mongo_cps.database_users'))).toMatchObject({ code: 'RC_AUDIT_DEFAULT_PURPOSE', severity: 'warn' });
    expect(await (await fetch(`${rls.adminUrl}/rlconfig`)).json()).toEqual(contract);
  });
});
