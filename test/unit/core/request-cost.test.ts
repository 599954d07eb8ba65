import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, ConfigError, createLimiter, ManualClock, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';

const errors: unknown[] = [];
const onError = (m: unknown): void => void errors.push(m);
subscribe(CHANNELS.costError, onError);
afterEach(() => {
  errors.length = 0;
});
// The subscription ends with this file: a worker may run other files after it (npm test keeps modules across files).
afterAll(() => unsubscribe(CHANNELS.costError, onError));

interface Gql {
  readonly ip: string;
  readonly complexity: unknown;
}

const bucket = (cost: LimitDefinition<Gql>['cost']): LimitDefinition<Gql> => ({ name: 'gql', purpose: 'shedding', algorithm: 'token-bucket', limit: 10, window: '1m', cost });

describe('cost from the request', () => {
  it('a cost function prices each request; check({ cost }) overrides it', async () => {
    const limiter = createLimiter<Gql>({ clock: new ManualClock(0), limits: [bucket((c) => c.complexity as number)] });
    expect((await limiter.check({ ip: 'a', complexity: 7 })).results[0]?.remaining).toBe(3);
    expect((await limiter.check({ ip: 'a', complexity: 4 })).allowed).toBe(false);
    expect((await limiter.check({ ip: 'a', complexity: 4 }, { cost: 3 })).results[0]?.remaining).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a cost above the burst can never fit (retryAfterMs Infinity, 413 over HTTP)', async () => {
    const limiter = createLimiter<Gql>({ limits: [bucket((c) => c.complexity as number)] });
    expect(await limiter.check({ ip: 'a', complexity: 11 })).toMatchObject({ allowed: false, retryAfterMs: Infinity });
  });

  it.each([
    ['throws', () => { throw new Error('parse error'); }],
    ['returns 1.5', () => 1.5],
    ['returns 0', () => 0],
    ['returns NaN', () => Number.NaN],
    ['returns a string', () => '3' as unknown as number],
  ])('a cost function that %s costs capacity + 1 (rejected, never fits), reported, never thrown', async (_n, fn) => {
    const limiter = createLimiter<Gql>({ limits: [bucket(fn)] });
    for (const check of [() => limiter.check({ ip: 'a', complexity: 1 }), () => Promise.resolve(limiter.checkSync({ ip: 'a', complexity: 1 })!)]) {
      const d = await check();
      expect(d).toMatchObject({ allowed: false, retryAfterMs: Infinity, limitName: 'gql' });
    }
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatchObject({ limitName: 'gql', cost: 11 });
    // It consumed nothing: a valid request still gets the whole burst.
    expect((await limiter.check({ ip: 'a', complexity: 1 }, { cost: 10 })).allowed).toBe(true);
  });

  it('the cost function runs once per check, after the key, and not when the key is absent', async () => {
    let calls = 0;
    const limiter = createLimiter<{ ip?: string }>({
      limits: [{ name: 'a', purpose: 'shedding', limit: 5, window: '1m', cost: () => (calls++, 1) }, { name: 'b', purpose: 'shedding', limit: 5, window: '1m', key: 'global' }],
    });
    await limiter.check({ ip: 'x' });
    await limiter.check({});
    expect(calls).toBe(1);
  });

  it('costFromContentLength prices by the declared bytes; a body of unknown or invalid length is a cost error', async () => {
    const limiter = createLimiter({ limits: [{ name: 'upload', purpose: 'shedding', limit: 1000, window: '1m', costFromContentLength: true }] });
    expect((await limiter.check({ ip: 'a', headers: { 'content-length': '600' } })).results[0]?.remaining).toBe(400);
    expect((await limiter.check({ ip: 'a', headers: { 'content-length': '600' } })).allowed).toBe(false);
    expect((await limiter.check({ ip: 'b', headers: { 'content-length': '0' } })).results[0]?.remaining).toBe(999);
    // A chunked body: its length is unknown when the limiter decides.
    expect(await limiter.check({ ip: 'c', headers: { 'transfer-encoding': 'chunked' } })).toMatchObject({ allowed: false, retryAfterMs: Infinity });
    // Transfer-Encoding overrides Content-Length (RFC 9112 section 6.3): still unknown.
    expect(await limiter.check({ ip: 'c', headers: { 'transfer-encoding': 'chunked', 'content-length': '5' } })).toMatchObject({ allowed: false, retryAfterMs: Infinity });
    expect(await limiter.check({ ip: 'c', headers: { 'content-length': '-1' } })).toMatchObject({ allowed: false, retryAfterMs: Infinity });
    expect(await limiter.check({ ip: 'c', headers: { 'content-length': ['5', '6'] } })).toMatchObject({ allowed: false, retryAfterMs: Infinity });
    // No headers at all: nothing says whether there is a body.
    expect(await limiter.check({ ip: 'c' })).toMatchObject({ allowed: false, retryAfterMs: Infinity });
    expect(errors).toHaveLength(5);
  });

  it('costFromContentLength: a request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112 section 6.3) and costs what an empty one does', async () => {
    const limiter = createLimiter({ limits: [{ name: 'upload', purpose: 'shedding', limit: 1000, window: '1m', costFromContentLength: true }] });
    const get = await limiter.check({ ip: 'a', method: 'GET', headers: { host: 'example.test' } });
    expect(get).toMatchObject({ allowed: true });
    expect(get.results[0]?.remaining).toBe(999);
    expect((await limiter.check({ ip: 'a', headers: { 'content-length': ['7', '7'] } })).results[0]?.remaining).toBe(992);
    expect(errors).toHaveLength(0);
  });

  it('refuses costFromContentLength beside cost, and a non-boolean', () => {
    expect(() => createLimiter({ limits: [{ name: 'u', purpose: 'shedding', limit: 5, window: '1m', cost: 2, costFromContentLength: true }] })).toThrow(ConfigError);
    expect(() => createLimiter({ limits: [{ name: 'u', purpose: 'shedding', limit: 5, window: '1m', costFromContentLength: 'yes' as unknown as boolean }] })).toThrow(/costFromContentLength/);
  });
});
