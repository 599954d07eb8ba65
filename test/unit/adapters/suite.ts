import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createLimiter, ManualClock, memoryStore, type LimitDefinition, type Limiter, type Store } from '../../../packages/ratecontract/src/index.js';
import { PROBLEM_TYPES } from '../../../packages/ratecontract/src/http/index.js';
import {
  abortAfterStart,
  countingStore,
  deferred,
  eventually,
  expectCleanHeaders,
  expectConformingFields,
  failingStore,
  raw,
  watchExchanges,
  type AppFactory,
  type RunningApp,
  type SuiteOptions,
} from './harness.js';

interface Fixture {
  readonly app: RunningApp;
  readonly limiter: Limiter;
  readonly clock: ManualClock;
  readonly started: Promise<void>;
  readonly release: () => void;
  /** Settles when the `/slow` handler has taken its last step. */
  readonly finished: Promise<void>;
  /** Every response the server has seen has closed, and the event loop has turned once since. */
  readonly settled: () => Promise<void>;
}

/**
 * The behaviour every adapter must show, against a real server on 127.0.0.1
 * and a real client. Each test builds its own limiter (ManualClock, memory
 * store unless said otherwise) and app.
 */
export function defineAdapterSuite(name: string, factory: AppFactory): void {
  describe(`${name}: the HTTP contract`, () => {
    const open: RunningApp[] = [];
    afterEach(async () => {
      await Promise.all(open.splice(0).map((a) => a.close()));
    });
    afterAll(async () => {
      await Promise.all(open.splice(0).map((a) => a.close()));
    });

    async function start(limits: LimitDefinition[], options: SuiteOptions = {}, store?: Store): Promise<Fixture> {
      const clock = new ManualClock(1_700_000_000_000);
      const limiter = createLimiter({ limits, clock, defaultStore: store ?? memoryStore() });
      const started = deferred();
      const hold = deferred();
      const finished = deferred();
      const app = await factory(limiter, options, { started: started.resolve, hold: () => hold.promise, finished: finished.resolve });
      open.push(app);
      const exchanges = watchExchanges(app.server);
      return { app, limiter, clock, started: started.promise, release: hold.resolve, finished: finished.promise, settled: () => exchanges.settled() };
    }

    const perIp = (limit: number, window: LimitDefinition['window'] = '1m'): LimitDefinition => ({ name: 'per-ip', purpose: 'abuse', limit, window, key: 'ip' });

    it('answers a denied client 403 problem+json without Retry-After; an allow-listed one skips the limit; lists change at run time', async () => {
      const f = await start([perIp(1)], { advertise: 'always' });
      f.limiter.lists.deny.add('127.0.0.1');
      for (let i = 0; i < 3; i++) {
        const r = await raw(f.app.url, '/hello');
        expect(r.status).toBe(403);
        expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(r.headers['retry-after']).toBeUndefined();
        expect(r.headers['ratelimit-policy']).toBeUndefined();
        expect(JSON.parse(r.body)).toMatchObject({ status: 403, title: 'Forbidden' });
      }
      f.limiter.lists.deny.clear();
      f.limiter.lists.allow.add('127.0.0.0/8');
      for (let i = 0; i < 3; i++) {
        const r = await raw(f.app.url, '/hello');
        expect(r.status).toBe(200);
        expect(r.headers['x-outcome']).toBe('allowed-list');
      }
      f.limiter.lists.allow.clear();
      expect((await raw(f.app.url, '/hello')).status).toBe(200);
      expect((await raw(f.app.url, '/hello')).status).toBe(429);
    });

    it('prices a request by its declared Content-Length, advertises qu="content-bytes", and answers a broken cost 413, never 500', async () => {
      const upload: LimitDefinition = { name: 'upload', purpose: 'shedding', algorithm: 'fixed-window', limit: 100, window: '1m', costFromContentLength: true };
      const f = await start([upload], { advertise: 'always' });
      const body = JSON.stringify({ pad: 'x'.repeat(50) }); // 60 bytes
      const post = (b: string): ReturnType<typeof raw> => raw(f.app.url, '/echo', { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(b)) }, body: b });
      const first = await post(body);
      expect(first.status).toBe(200);
      expect(first.headers['ratelimit-policy']).toMatch(/^"upload";q=100;qu="content-bytes";w=60(;|$)/);
      expect(first.headers['ratelimit']).toMatch(/^"upload";r=40;/);
      const second = await post(body);
      expect(second.status).toBe(429);
      // More than the limit can ever admit: 413, no Retry-After.
      const huge = await post(JSON.stringify('x'.repeat(99)));
      expect(huge.status).toBe(413);
      expect(huge.headers['retry-after']).toBeUndefined();
      // No Content-Length (chunked): a cost error, answered like a cost that never fits.
      const chunked = await raw(f.app.url, '/echo', { method: 'POST', body: 'abc', chunked: true });
      expect(chunked.status).toBe(413);
    });

    it('costFromContentLength: a GET with neither Content-Length nor Transfer-Encoding has no body and costs 1, not a 413', async () => {
      const upload: LimitDefinition = { name: 'upload', purpose: 'shedding', algorithm: 'fixed-window', limit: 100, window: '1m', costFromContentLength: true };
      const f = await start([upload], { advertise: 'always' });
      const get = await raw(f.app.url, '/hello?query=x');
      expect(get.status).toBe(200);
      expect(get.headers['ratelimit']).toMatch(/^"upload";r=99;/);
      const chunked = await raw(f.app.url, '/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '"abc"', chunked: true });
      expect(chunked.status).toBe(413);
    });

    it('plans: each tenant is limited and advertised at its plan\'s figures; an unknown plan is its fail mode, never 500', async () => {
      const tenant: LimitDefinition = {
        name: 'tenant', purpose: 'shedding', algorithm: 'fixed-window', limit: 2, window: '1m', key: 'header.x-tenant', plan: 'header.x-plan',
        plans: { free: {}, pro: { limit: 5 } },
      };
      const f = await start([tenant], { advertise: 'always' });
      const get = (t: string, plan: string): ReturnType<typeof raw> => raw(f.app.url, '/hello', { headers: { 'x-tenant': t, 'x-plan': plan } });
      const free = [await get('a', 'free'), await get('a', 'free'), await get('a', 'free')];
      expect(free.map((r) => r.status)).toEqual([200, 200, 429]);
      expect(free[0]?.headers['ratelimit-policy']).toMatch(/^"tenant";q=2;w=60(;|$)/);
      const pro = await get('b', 'pro');
      expect(pro.status).toBe(200);
      expect(pro.headers['ratelimit-policy']).toMatch(/^"tenant";q=5;w=60(;|$)/);
      expect(pro.headers['ratelimit']).toMatch(/^"tenant";r=4;/);
      // Upgraded at its next request: tenant a's 2 stay counted against pro's 5.
      expect((await get('a', 'pro')).headers['ratelimit']).toMatch(/^"tenant";r=2;/);
      const unknown = await get('c', 'gold');
      expect(unknown.status).toBe(200);
      expect(unknown.headers['x-outcome']).toBe('degraded');
    });

    it('answers a throwing cost function 413 (the strict side), never 500', async () => {
      const f = await start([{ name: 'gql', purpose: 'shedding', limit: 10, window: '1m', cost: () => { throw new Error('parse error'); } }]);
      const r = await raw(f.app.url, '/hello');
      expect(r.status).toBe(413);
    });

    it("settles count: 'failures' by the response: successes are given back, a 500 and an aborted request are counted", async () => {
      const f = await start([{ name: 'per-ip', purpose: 'abuse', limit: 2, window: '1m', key: 'ip', count: 'failures' }]);
      for (let i = 0; i < 6; i++) {
        expect((await raw(f.app.url, '/hello')).status, `success ${i}`).toBe(200);
        await f.settled();
      }
      expect((await raw(f.app.url, '/boom')).status).toBe(500);
      await f.settled();
      await abortAfterStart(f.app.url, '/slow', f.started);
      await f.settled();
      // Two failures counted: the limit (2) is reached.
      await eventually(async () => (await raw(f.app.url, '/hello')).status === 429);
    });

    it('lets a request through, exposes the decision, and tells an anonymous caller nothing', async () => {
      const { app } = await start([perIp(5)]);
      const r = await fetch(`${app.url}/hello`);
      expect(r.status).toBe(200);
      expect(await r.text()).toBe('hello');
      expect(r.headers.get('x-outcome')).toBe('allowed');
      expect(r.headers.get('ratelimit')).toBeNull();
      expect(r.headers.get('ratelimit-policy')).toBeNull();
      expect(r.headers.get('retry-after')).toBeNull();
    });

    it('gives an authenticated caller conforming RateLimit and RateLimit-Policy fields', async () => {
      const { app } = await start([{ name: 'per-user', purpose: 'abuse', limit: 5, window: '1m', key: 'principal' }, perIp(50)], { identifyHeader: true });
      const r = await raw(app.url, '/hello', { headers: { 'x-user': 'alice' } });
      expect(r.status).toBe(200);
      const { policies, current } = expectConformingFields(r.headers);
      expect(policies.map((i): unknown => i[0])).toEqual(['per-user', 'per-ip']);
      expect(current.map((i): unknown => i[1].get('r'))).toEqual([4, 49]);
      expect(r.headers['ratelimit-policy']).toMatch(/^"per-user";q=5;w=60;pk=:[A-Za-z0-9+/=]+:, "per-ip";q=50;w=60;pk=:[A-Za-z0-9+/=]+:$/);
      expect(r.headers['ratelimit-policy']).not.toContain('alice');
    });

    it('answers 429 with exact Retry-After, no-store and problem+json; terse for anonymous callers', async () => {
      const { app, clock } = await start([perIp(1, '5s')]);
      expect((await raw(app.url, '/hello')).status).toBe(200);
      clock.advance(1);
      const r = await raw(app.url, '/hello');
      expect(r.status).toBe(429);
      expect(r.headers['retry-after']).toBe('5'); // 4999 ms -> 5
      expect(r.headers['cache-control']).toBe('no-store');
      expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(r.headers['ratelimit']).toBeUndefined();
      expect(r.headers['ratelimit-policy']).toBeUndefined();
      expect(JSON.parse(r.body)).toEqual({ type: PROBLEM_TYPES.quotaExceeded, title: 'Quota Exceeded', status: 429, detail: 'Too many requests. Retry after 5 seconds.' });
      clock.advance(4998);
      expect((await raw(app.url, '/hello')).headers['retry-after']).toBe('1'); // 1 ms -> 1
      clock.advance(1);
      expect((await raw(app.url, '/hello')).status).toBe(200);
    });

    it('names the violated policy to an authenticated caller, with Retry-After >= its t', async () => {
      const { app } = await start([{ name: 'per-user', purpose: 'abuse', limit: 1, window: '1m', key: 'principal' }, perIp(50)], { identifyHeader: true });
      await raw(app.url, '/hello', { headers: { 'x-user': 'alice' } });
      const r = await raw(app.url, '/hello', { headers: { 'x-user': 'alice' } });
      expect(r.status).toBe(429);
      expect(r.headers['retry-after']).toBe('60');
      const { current } = expectConformingFields(r.headers);
      expect(current.map((i): unknown => i[0])).toEqual(['per-user']);
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(current[0]?.[1].get('t') as number);
      expect(JSON.parse(r.body)).toMatchObject({ type: PROBLEM_TYPES.quotaExceeded, 'violated-policies': ['per-user'] });
      // another user is unaffected
      expect((await raw(app.url, '/hello', { headers: { 'x-user': 'bob' } })).status).toBe(200);
    });

    it('answers 503 temporary-reduced-capacity for a global limit', async () => {
      const { app } = await start([{ name: 'global', purpose: 'shedding', limit: 1, window: '10s', key: 'global' }]);
      await raw(app.url, '/hello');
      const r = await raw(app.url, '/hello');
      expect(r.status).toBe(503);
      expect(r.headers['retry-after']).toBe('10');
      expect(r.headers['cache-control']).toBe('no-store');
      expect(JSON.parse(r.body)).toMatchObject({ type: PROBLEM_TYPES.temporaryReducedCapacity, status: 503 });
    });

    it('answers 413 without Retry-After when the cost can never fit', async () => {
      const { app } = await start([perIp(3)], { costHeader: true });
      const r = await raw(app.url, '/hello', { headers: { 'x-cost': '4' } });
      expect(r.status).toBe(413);
      expect(r.headers['retry-after']).toBeUndefined();
      expect(JSON.parse(r.body)).toMatchObject({ type: PROBLEM_TYPES.quotaExceeded, status: 413 });
    });

    describe('never 500', () => {
      it('a failing store on a fail-closed limit: 503 with Retry-After', async () => {
        const { app } = await start([{ ...perIp(3), failClosedAfter: 0 }], {}, failingStore);
        const r = await raw(app.url, '/hello');
        expect(r.status).toBe(503);
        expect(r.headers['retry-after']).toBe('1');
      });

      it('a failing store on a fail-open limit: admitted', async () => {
        const { app } = await start([{ name: 'cap', purpose: 'shedding', onError: 'open', limit: 3, window: '1m', key: 'ip' }], {}, failingStore);
        const r = await fetch(`${app.url}/hello`);
        expect(r.status).toBe(200);
        expect(r.headers.get('x-outcome')).toBe('fail-open');
      });

      it('a throwing key extractor: decided under a shared key, not a crash', async () => {
        const boom = (): string => {
          throw new Error('bad key');
        };
        const { app } = await start([{ name: 'fn', purpose: 'abuse', limit: 1, window: '1m', key: boom }]);
        expect((await raw(app.url, '/hello')).status).toBe(200);
        expect((await raw(app.url, '/hello')).status).toBe(429);
      });

      it('a throwing identify: 503 with Retry-After, reported', async () => {
        const seen: unknown[] = [];
        const { app } = await start([perIp(3)], { identifyThrows: true, errorRetryAfter: '2s', onUnexpectedError: (e) => seen.push(e) });
        const r = await raw(app.url, '/hello');
        expect(r.status).toBe(503);
        expect(r.headers['retry-after']).toBe('2');
        expect(JSON.parse(r.body)).toMatchObject({ type: PROBLEM_TYPES.temporaryReducedCapacity });
        expect(seen).toHaveLength(1);
      });

      it('an invalid cost: 503 with Retry-After', async () => {
        const { app } = await start([perIp(3)], { costHeader: true });
        const r = await raw(app.url, '/hello', { headers: { 'x-cost': '-1' } });
        expect(r.status).toBe(503);
        expect(r.headers['retry-after']).toBe('1');
      });
    });

    it('never lets hostile keys into headers (CRLF, NUL, 10 KB)', async () => {
      const tenK = 'x'.repeat(10 * 1024);
      const cases: Array<{ query: string; header: string }> = [
        { query: '\r\nSet-Cookie: evil=1', header: 'h1' },
        { query: 'a\u0000b', header: 'h2' },
        { query: tenK, header: 'h3' },
        { query: 'q4', header: tenK },
        { query: '"; q=999999, "x', header: '"; q=999999, "x' },
        { query: '\u00e9\u4e2d\ud83d\ude00', header: 'h6' },
      ];
      const { app } = await start(
        [
          { name: 'by-query', purpose: 'abuse', limit: 1, window: '1m', key: 'query.k' },
          { name: 'by-header', purpose: 'abuse', limit: 5, window: '1m', key: 'header.x-key' },
        ],
        { advertise: 'always', legacyHeaders: true },
      );
      for (const { query, header } of cases) {
        const path = `/hello?k=${encodeURIComponent(query)}`;
        const headerValue = header;
        for (const expected of [200, 429]) {
          const r = await raw(app.url, path, { headers: { 'x-key': headerValue } });
          expect(r.status).toBe(expected);
          expectCleanHeaders(r, ['evil', 'xxxxxxxx', 'q=999999']);
          expectConformingFields(r.headers);
          if (expected === 429) {
            const body = JSON.parse(r.body) as Record<string, unknown>;
            expect(body['violated-policies']).toEqual(['by-query']);
            expect(r.body).not.toContain('evil');
          }
        }
      }
    });

    describe('client address', () => {
      it('ignores X-Forwarded-For and Forwarded from an untrusted peer', async () => {
        const { app } = await start([perIp(1)]);
        expect((await raw(app.url, '/hello', { headers: { 'x-forwarded-for': '203.0.113.1' } })).status).toBe(200);
        expect((await raw(app.url, '/hello', { headers: { 'x-forwarded-for': '203.0.113.2' } })).status).toBe(429);
        expect((await raw(app.url, '/hello', { headers: { forwarded: 'for=203.0.113.3' } })).status).toBe(429);
      });

      it('reads X-Forwarded-For right to left through trusted hops only', async () => {
        const { app } = await start([perIp(1)], { trustProxy: 'loopback' });
        expect((await raw(app.url, '/hello', { headers: { 'x-forwarded-for': '6.6.6.6, 203.0.113.5' } })).status).toBe(200);
        // the spoofed left part changes nothing
        expect((await raw(app.url, '/hello', { headers: { 'x-forwarded-for': '7.7.7.7, 203.0.113.5' } })).status).toBe(429);
        expect((await raw(app.url, '/hello', { headers: { 'x-forwarded-for': '203.0.113.6' } })).status).toBe(200);
      });

      it('reads RFC 7239 Forwarded when configured', async () => {
        const { app } = await start([perIp(1)], { trustProxy: ['127.0.0.0/8', '::1'], forwardedHeader: 'forwarded' });
        expect((await raw(app.url, '/hello', { headers: { forwarded: 'for=6.6.6.6, for="203.0.113.7:1234"' } })).status).toBe(200);
        expect((await raw(app.url, '/hello', { headers: { forwarded: 'for=7.7.7.7;proto=https, for=203.0.113.7' } })).status).toBe(429);
        expect((await raw(app.url, '/hello', { headers: { forwarded: 'for=203.0.113.8', 'x-forwarded-for': '203.0.113.7' } })).status).toBe(200);
      });

      it('groups IPv6 clients by /64 by default, by the configured prefix otherwise', async () => {
        const { app } = await start([perIp(1)], { trustProxy: 1 });
        expect((await raw(app.url, '/hello', { headers: { 'x-forwarded-for': '2001:db8:1:2::1' } })).status).toBe(200);
        expect((await raw(app.url, '/hello', { headers: { 'x-forwarded-for': '2001:db8:1:2:ffff:ffff:ffff:ffff' } })).status).toBe(429);
        expect((await raw(app.url, '/hello', { headers: { 'x-forwarded-for': '2001:db8:1:3::1' } })).status).toBe(200);
        expect((await raw(app.url, '/hello', { headers: { 'x-forwarded-for': '::ffff:203.0.113.9' } })).status).toBe(200);
        expect((await raw(app.url, '/hello', { headers: { 'x-forwarded-for': '203.0.113.9' } })).status).toBe(429);
        const exact = await start([perIp(1)], { trustProxy: 1, ipv6Prefix: 128 });
        expect((await raw(exact.app.url, '/hello', { headers: { 'x-forwarded-for': '2001:db8:1:2::1' } })).status).toBe(200);
        expect((await raw(exact.app.url, '/hello', { headers: { 'x-forwarded-for': '2001:db8:1:2::2' } })).status).toBe(200);
      });
    });

    describe('body keys', () => {
      const byPhone: LimitDefinition = { name: 'otp-recipient', purpose: 'abuse', limit: 1, window: '15m', key: 'body.phone' };

      it('limits by a JSON body field and still hands the body to the handler', async () => {
        const { app } = await start([byPhone]);
        const post = (phone: string): Promise<Response> =>
          fetch(`${app.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ phone }) });
        const first = await post('+15550001');
        expect(first.status).toBe(200);
        expect(await first.json()).toEqual({ body: { phone: '+15550001' } });
        expect((await post('+15550001')).status).toBe(429);
        expect((await post('+15550002')).status).toBe(200);
      });

      it('answers 413 over maxBodyBytes, declared or chunked, and keeps serving', async () => {
        const { app } = await start([byPhone], { maxBodyBytes: 64 });
        const big = JSON.stringify({ phone: '1', pad: 'x'.repeat(200) });
        const declared = await raw(app.url, '/echo', { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(big.length) }, body: big });
        expect(declared.status).toBe(413);
        const chunked = await raw(app.url, '/echo', { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, body: big, chunked: true });
        expect(chunked.status).toBe(413);
        expect((await fetch(`${app.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"phone":"2"}' })).status).toBe(200);
      });

      it('does not read the body when no limit uses it', async () => {
        const { app } = await start([perIp(5)], { maxBodyBytes: 8 });
        const r = await fetch(`${app.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 'long enough to pass eight bytes' }) });
        expect(r.status).toBe(200);
        expect(await r.json()).toEqual({ body: { a: 'long enough to pass eight bytes' } });
      });
    });

    it('waits delayMs in leaky-bucket queue mode, then serves', async () => {
      const waits: number[] = [];
      const { app } = await start([{ name: 'paced', purpose: 'shedding', algorithm: 'leaky-bucket', mode: 'queue', limit: 1, window: '2s', burst: 3, key: 'ip' }], {
        delay: (ms) => {
          waits.push(ms);
          return Promise.resolve();
        },
      });
      expect((await raw(app.url, '/hello')).status).toBe(200);
      expect((await raw(app.url, '/hello')).status).toBe(200);
      expect((await raw(app.url, '/hello')).status).toBe(200);
      expect(waits).toEqual([2000, 4000]);
      expect((await raw(app.url, '/hello')).status).toBe(429);
    });

    it('ends the queue-mode wait when the client leaves (the connection signal aborts)', async () => {
      let waiting: (() => void) | undefined;
      const waitStarted = new Promise<void>((resolve) => (waiting = resolve));
      const signals: Array<AbortSignal | undefined> = [];
      const { app } = await start([{ name: 'paced', purpose: 'shedding', algorithm: 'leaky-bucket', mode: 'queue', limit: 1, window: '2s', burst: 2, key: 'ip' }], {
        // Waits for the connection's signal only (bounded by the test's timeout otherwise).
        delay: (_ms, signal) => {
          signals.push(signal);
          waiting?.();
          return new Promise<void>((resolve) => {
            if (signal === undefined || signal.aborted) resolve();
            else signal.addEventListener('abort', () => resolve(), { once: true });
          });
        },
      });
      expect((await raw(app.url, '/hello')).status).toBe(200); // no wait
      await abortAfterStart(app.url, '/hello', waitStarted); // waits, then the client leaves
      await eventually(() => Promise.resolve(signals[0]?.aborted === true));
      expect(signals).toHaveLength(1);
    });

    /*
     * Each test counts the store's release calls per lease id. It never waits a
     * fixed time for a second release that may or may not come: it waits for
     * every ending that could trigger one (the response's 'finish' and
     * 'close', the handler's last step, the adapter's code after the handler)
     * and then asserts. The verdict is the same on a loaded machine as on an
     * idle one.
     */
    describe('concurrency leases are released exactly once', () => {
      const inFlight: LimitDefinition = { name: 'in-flight', purpose: 'shedding', algorithm: 'concurrency', limit: 1, window: '1m', key: 'ip', status: 429 };
      const admitted = async (url: string): Promise<boolean> => (await raw(url, '/hello')).status === 200;

      it('on normal completion', async () => {
        const store = countingStore();
        const f = await start([inFlight], {}, store);
        const slow = raw(f.app.url, '/slow');
        await f.started;
        const busy = await raw(f.app.url, '/hello');
        expect(busy.status).toBe(429);
        expect(busy.headers['retry-after']).toBe('60');
        f.release();
        expect((await slow).status).toBe(200);
        await f.finished;
        await store.released(1);
        // The lease is free again: the next request is admitted (and takes and frees a second lease).
        expect(await admitted(f.app.url)).toBe(true);
        await f.settled();
        expect([...store.releases.values()]).toEqual([1, 1]);
      });

      it('when the handler throws', async () => {
        const store = countingStore();
        const f = await start([inFlight], {}, store);
        expect((await raw(f.app.url, '/boom')).status).toBe(500);
        await store.released(1);
        expect(await admitted(f.app.url)).toBe(true);
        await f.settled();
        expect([...store.releases.values()]).toEqual([1, 1]);
      });

      it('when the client aborts', async () => {
        const store = countingStore();
        const f = await start([inFlight], {}, store);
        await abortAfterStart(f.app.url, '/slow', f.started);
        // The abort alone frees the lease, while the handler still holds the request.
        await store.released(1);
        expect(await admitted(f.app.url)).toBe(true);
        // Now the handler finishes on the closed connection: a late 'finish' or the end of the handler chain must not release again.
        f.release();
        await f.finished;
        await f.settled();
        expect([...store.releases.values()]).toEqual([1, 1]);
      });
    });
  });
}
