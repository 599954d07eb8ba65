import { parseDictionary, parseItem, parseList } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { createLimiter, ManualClock, memoryStore, type LimitDefinition, type Limiter, type RequestContext, type Store } from '../../../packages/ratecontract/src/index.js';
import { mapDecision, partitionKey, PROBLEM_TYPES, resolveResponseOptions, retryAfterSeconds, type HttpResponse, type ResponseOptions } from '../../../packages/ratecontract/src/http/index.js';

const abuse = (def: Partial<LimitDefinition> & Pick<LimitDefinition, 'name' | 'limit' | 'window'>): LimitDefinition => ({ purpose: 'abuse', ...def });

function setup(limits: LimitDefinition[], store?: Store): { limiter: Limiter; clock: ManualClock } {
  const clock = new ManualClock(1_700_000_000_000);
  return { limiter: createLimiter({ limits, clock, defaultStore: store ?? memoryStore() }), clock };
}

async function answer(limiter: Limiter, ctx: RequestContext, options: ResponseOptions = {}, cost?: number): Promise<HttpResponse> {
  const decision = await limiter.check(ctx, cost === undefined ? undefined : { cost });
  return mapDecision(
    decision,
    {
      limits: limiter.limits,
      authenticated: ctx.principal !== undefined,
      keyOf: (l) => l.key(ctx),
    },
    resolveResponseOptions({ partitionKeySecret: 'test-secret', ...options }),
  );
}

function body(r: HttpResponse): Record<string, unknown> {
  return JSON.parse(r.body ?? 'null') as Record<string, unknown>;
}

const failing: Store = {
  kind: 'failing',
  evaluate: () => Promise.reject(new Error('down')),
  refund: () => Promise.resolve(),
  release: () => Promise.resolve(),
};

describe('retryAfterSeconds', () => {
  it.each([
    [1, 1],
    [999, 1],
    [1000, 1],
    [1001, 2],
    [4999, 5],
    [5000, 5],
    [5001, 6],
    [0, 0],
  ])('%d ms -> %d s', (ms, s) => {
    expect(retryAfterSeconds(ms)).toBe(s);
  });
});

describe('mapDecision', () => {
  it('allows with no fields for an anonymous caller, and the full table for an authenticated one', async () => {
    const { limiter } = setup([abuse({ name: 'per-ip', limit: 10, window: '1m', key: 'ip' })]);
    const anon = await answer(limiter, { ip: '203.0.113.1' });
    expect(anon).toEqual({ status: 200, headers: {}, body: undefined });
    const auth = await answer(limiter, { ip: '203.0.113.1', principal: 'alice' });
    expect(auth.status).toBe(200);
    const pk = Buffer.from(partitionKey(new TextEncoder().encode('test-secret'), 'ip', '203.0.113.1')).toString('base64');
    expect(auth.headers['RateLimit-Policy']).toBe(`"per-ip";q=10;w=60;pk=:${pk}:`);
    expect(auth.headers['RateLimit']).toMatch(new RegExp(`^"per-ip";r=8;t=12;pk=:${pk.replace(/[+/]/g, '\\$&')}:$`));
  });

  it('answers 429 with exact Retry-After, no-store and problem+json; terse for anonymous callers', async () => {
    const { limiter, clock } = setup([abuse({ name: 'login', limit: 1, window: '1s', key: 'ip' })]);
    await answer(limiter, { ip: '203.0.113.1' });
    clock.advance(999);
    const r = await answer(limiter, { ip: '203.0.113.1' });
    expect(r.status).toBe(429);
    expect(r.headers).toEqual({ 'Retry-After': '1', 'Cache-Control': 'no-store', 'Content-Type': 'application/problem+json' });
    expect(body(r)).toEqual({ type: PROBLEM_TYPES.quotaExceeded, title: 'Quota Exceeded', status: 429, detail: 'Too many requests. Retry after 1 second.' });
    expect(r.body).not.toContain('login');
  });

  it('names violated policies and lists only them in RateLimit on a rejection, when advertising', async () => {
    const { limiter } = setup([
      abuse({ name: 'per-user', limit: 1, window: '1m', key: 'principal' }),
      abuse({ name: 'per-ip', limit: 100, window: '1h', key: 'ip' }),
    ]);
    await answer(limiter, { ip: '203.0.113.1', principal: 'alice' });
    const r = await answer(limiter, { ip: '203.0.113.1', principal: 'alice' });
    expect(r.status).toBe(429);
    expect(r.headers['Retry-After']).toBe('60');
    expect(parseList(r.headers['RateLimit-Policy'] ?? '').map((i): unknown => i[0])).toEqual(['per-user', 'per-ip']);
    const current = parseList(r.headers['RateLimit'] ?? '');
    expect(current.map((i): unknown => i[0])).toEqual(['per-user']);
    expect(current[0]?.[1].get('r')).toBe(0);
    expect(current[0]?.[1].get('t')).toBe(60);
    expect(body(r)['violated-policies']).toEqual(['per-user']);
  });

  it('answers 503 temporary-reduced-capacity for a global limit and does not advertise capacity by default', async () => {
    const { limiter } = setup([{ name: 'global', purpose: 'shedding', limit: 1, window: '10s', key: 'global' }]);
    await answer(limiter, { principal: 'alice' });
    const r = await answer(limiter, { principal: 'alice' });
    expect(r.status).toBe(503);
    expect(r.headers['Retry-After']).toBe('10');
    expect(r.headers['Cache-Control']).toBe('no-store');
    expect(r.headers['RateLimit-Policy']).toBeUndefined();
    expect(body(r)).toMatchObject({ type: PROBLEM_TYPES.temporaryReducedCapacity, status: 503 });
    expect(body(r)['violated-policies']).toBeUndefined();
    const { limiter: l2 } = setup([{ name: 'global', purpose: 'shedding', limit: 1, window: '10s', key: 'global' }]);
    await answer(l2, { principal: 'alice' }, { advertiseCapacity: true });
    const shown = await answer(l2, { principal: 'alice' }, { advertiseCapacity: true });
    expect(shown.headers['RateLimit-Policy']).toBe('"global";q=1;w=10');
    expect(body(shown)['violated-policies']).toEqual(['global']);
  });

  it('honours a per-limit status override', async () => {
    const { limiter } = setup([abuse({ name: 'tenant', limit: 1, window: '1m', key: 'header.x-tenant', status: 503 })]);
    await answer(limiter, { headers: { 'x-tenant': 't1' } });
    expect((await answer(limiter, { headers: { 'x-tenant': 't1' } })).status).toBe(503);
  });

  it('answers a fail-closed decision with 503 and Retry-After, naming nothing', async () => {
    const { limiter } = setup([abuse({ name: 'otp', limit: 3, window: '15m', key: 'ip', failClosedAfter: 0 })], failing);
    const r = await answer(limiter, { ip: '203.0.113.1', principal: 'alice' });
    expect(r.status).toBe(503);
    expect(r.headers['Retry-After']).toBe('1');
    expect(r.headers['RateLimit']).toBeUndefined();
    expect(body(r)['violated-policies']).toBeUndefined();
  });

  it('answers 413 without Retry-After when the cost can never fit', async () => {
    const { limiter } = setup([abuse({ name: 'bytes', limit: 10, window: '1m', key: 'principal' })]);
    const r = await answer(limiter, { principal: 'alice' }, {}, 11);
    expect(r.status).toBe(413);
    expect(r.headers['Retry-After']).toBeUndefined();
    expect(r.headers['Cache-Control']).toBe('no-store');
    expect(body(r)).toMatchObject({ type: PROBLEM_TYPES.quotaExceeded, status: 413, 'violated-policies': ['bytes'] });
    const item = parseList(r.headers['RateLimit'] ?? '')[0];
    expect(item?.[1].has('t')).toBe(false);
  });

  it('does not advertise shadow limits or limits that did not apply', async () => {
    const { limiter } = setup([
      abuse({ name: 'shadowed', limit: 1, window: '1m', key: 'principal', shadow: true }),
      abuse({ name: 'by-tenant', limit: 5, window: '1m', key: 'header.x-tenant' }),
      abuse({ name: 'per-user', limit: 5, window: '1m', key: 'principal' }),
    ]);
    const r = await answer(limiter, { principal: 'alice' });
    expect(parseList(r.headers['RateLimit-Policy'] ?? '').map((i): unknown => i[0])).toEqual(['per-user']);
  });

  it('advertise: never and always', async () => {
    const { limiter } = setup([abuse({ name: 'per-ip', limit: 1, window: '1m', key: 'ip' })]);
    expect((await answer(limiter, { ip: '1.1.1.1', principal: 'a' }, { advertise: 'never' })).headers).toEqual({});
    const r = await answer(limiter, { ip: '1.1.1.1' }, { advertise: 'always' });
    expect(r.status).toBe(429);
    expect(r.headers['RateLimit']).toMatch(/^"per-ip";r=0;t=60;pk=:/);
    expect(body(r)['violated-policies']).toEqual(['per-ip']);
  });

  it('advertises concurrency limits with qu and no window', async () => {
    const { limiter } = setup([abuse({ name: 'in-flight', algorithm: 'concurrency', limit: 2, window: '30s', key: 'global' })]);
    const r = await answer(limiter, { principal: 'a' }, { advertiseCapacity: true });
    expect(r.headers['RateLimit-Policy']).toBe('"in-flight";q=2;qu="concurrent-requests"');
    expect(r.headers['RateLimit']).toBe('"in-flight";r=1');
  });

  it('caps what long windows advertise (windowCap)', async () => {
    const { limiter } = setup([abuse({ name: 'daily', limit: 10_000, window: '1d', key: 'principal' })]);
    const r = await answer(limiter, { principal: 'a' }, { windowCap: '1m', partitionKeys: false });
    expect(r.headers['RateLimit-Policy']).toBe('"daily";q=10000;w=86400');
    // ceil(10000 * 60 / 86400) = 7
    expect(r.headers['RateLimit']).toBe('"daily";r=7;t=9');
  });

  it('never puts the raw key in pk, and pk depends on key and secret', () => {
    const secret = new TextEncoder().encode('s1');
    const a = Buffer.from(partitionKey(secret, 'principal', 'alice')).toString('base64');
    expect(a).not.toContain(Buffer.from('alice').toString('base64'));
    expect(Buffer.from(partitionKey(secret, 'principal', 'alice')).toString('base64')).toBe(a);
    expect(Buffer.from(partitionKey(secret, 'principal', 'bob')).toString('base64')).not.toBe(a);
    expect(Buffer.from(partitionKey(new TextEncoder().encode('s2'), 'principal', 'alice')).toString('base64')).not.toBe(a);
    expect(partitionKey(secret, 'principal', 'alice').length).toBe(12);
  });

  it('sends the draft-7, draft-6 and legacy shapes behind options, for one limit', async () => {
    const limits = [abuse({ name: 'a', limit: 5, window: '1m', key: 'principal' }), abuse({ name: 'b', limit: 3, window: '10s', key: 'principal' })];
    const seven = await answer(setup(limits).limiter, { principal: 'u' }, { fields: 'draft-7' });
    expect(parseDictionary(seven.headers['RateLimit'] ?? '').get('remaining')?.[0]).toBe(2);
    expect(seven.headers['RateLimit']).toBe('limit=3, remaining=2, reset=4');
    expect(seven.headers['RateLimit-Policy']).toBe('3;w=10');
    const six = await answer(setup(limits).limiter, { principal: 'u' }, { fields: 'draft-6' });
    expect(six.headers).toEqual({ 'RateLimit-Limit': '3', 'RateLimit-Remaining': '2', 'RateLimit-Reset': '4', 'RateLimit-Policy': '3;w=10' });
    expect(parseItem(six.headers['RateLimit-Limit'] ?? '')[0]).toBe(3);
    const { limiter, clock } = setup(limits);
    const legacy = await answer(limiter, { principal: 'u' }, { fields: false, legacyHeaders: true, clock });
    expect(legacy.headers).toEqual({
      'X-RateLimit-Limit': '3',
      'X-RateLimit-Remaining': '2',
      'X-RateLimit-Reset': String(Math.ceil(clock.now() / 1000) + 4),
    });
    const none = await answer(setup(limits).limiter, { principal: 'u' }, { fields: false });
    expect(none.headers).toEqual({});
  });

  it('validates options, naming them', () => {
    expect(() => resolveResponseOptions({ advertise: 'sometimes' as 'always' })).toThrow(/advertise/);
    expect(() => resolveResponseOptions({ fields: 'draft-8' as 'draft-7' })).toThrow(/fields/);
    expect(() => resolveResponseOptions({ windowCap: '1 minute' as '1m' })).toThrow(/windowCap/);
    expect(() => resolveResponseOptions({ partitionKeySecret: '' })).toThrow(/partitionKeySecret/);
    expect(() => resolveResponseOptions({ legacyHeaders: 'yes' as unknown as boolean })).toThrow(/legacyHeaders/);
  });
});
