import { describe, expect, it } from 'vitest';
import { createLimiter, ManualClock, memoryStore, type LimitDefinition, type RequestContext, type Store } from '../../../packages/ratecontract/src/index.js';

const T0 = 1_700_000_000_000;

function recipientTenantIp(clock: ManualClock, extra: Partial<LimitDefinition> = {}): LimitDefinition[] {
  return [
    { name: 'recipient', purpose: 'abuse', algorithm: 'fixed-window', limit: 3, window: '15m', key: 'body.phone', ...extra },
    { name: 'tenant', purpose: 'shedding', algorithm: 'token-bucket', limit: 5, window: '1m', key: 'header.x-tenant' },
    { name: 'ip', purpose: 'abuse', algorithm: 'gcra', limit: 10, window: '1m', key: 'ip' },
  ];
}

const req = (phone: string, tenant = 't1', ip = '192.0.2.1') => ({ ip, headers: { 'x-tenant': tenant }, body: { phone } });

describe('the chain', () => {
  it('admits only when every limit admits, and a rejected request consumes nothing anywhere', async () => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter({ clock, limits: recipientTenantIp(clock) });
    for (let i = 0; i < 3; i++) expect((await limiter.check(req('+100'))).allowed).toBe(true);
    const rejected = await limiter.check(req('+100'));
    expect(rejected.allowed).toBe(false);
    expect(rejected.outcome).toBe('rejected');
    expect(rejected.status).toBe(429);
    expect(rejected.limitName).toBe('recipient');
    // tenant had 5 tokens, 3 spent by admitted requests; the rejected one took none.
    expect(rejected.results.map((r) => [r.name, r.allowed, r.remaining])).toEqual([
      ['recipient', false, 0],
      ['tenant', true, 2],
      ['ip', true, 7],
    ]);
    const other = await limiter.check(req('+200'));
    expect(other.allowed).toBe(true);
    expect(other.results[1]?.remaining).toBe(1);
  });

  it('names the first rejecting limit and waits for the whole chain', async () => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter({
      clock,
      limits: [
        { name: 'specific', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '10s', key: 'ip' },
        { name: 'broad', purpose: 'shedding', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'global' },
      ],
    });
    expect((await limiter.check({ ip: 'a' })).allowed).toBe(true);
    const d = await limiter.check({ ip: 'a' });
    expect(d.limitName).toBe('specific');
    const waitSpecific = d.results[0]?.retryAfterMs ?? 0;
    const waitBroad = d.results[1]?.retryAfterMs ?? 0;
    expect(waitBroad).toBeGreaterThan(waitSpecific);
    expect(d.retryAfterMs).toBe(waitBroad);
    clock.advance(d.retryAfterMs - 1);
    expect((await limiter.check({ ip: 'a' })).allowed).toBe(false);
    clock.advance(1);
    expect((await limiter.check({ ip: 'a' })).allowed).toBe(true);
  });

  it('a global limit answers 503, a per-client one 429, and status is overridable', async () => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter({
      clock,
      limits: [
        { name: 'global', purpose: 'shedding', algorithm: 'fixed-window', limit: 3, window: '1s', key: 'global' },
        { name: 'per-ip', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1s', key: 'ip' },
        { name: 'per-user', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1s', key: 'principal', status: 503 },
      ],
    });
    const verdict = async (ctx: RequestContext): Promise<[boolean, number, string | undefined]> => {
      const d = await limiter.check(ctx);
      return [d.allowed, d.status, d.limitName];
    };
    // Defaults: a per-client key answers 429.
    expect(await verdict({ ip: 'a' })).toEqual([true, 200, undefined]);
    expect(await verdict({ ip: 'a' })).toEqual([false, 429, 'per-ip']);
    // The override: a per-client limit with status 503.
    expect(await verdict({ principal: 'u' })).toEqual([true, 200, undefined]);
    expect(await verdict({ principal: 'u' })).toEqual([false, 503, 'per-user']);
    // Defaults: the global key answers 503 once its 3 are used (two admissions above, one here).
    expect(await verdict({})).toEqual([true, 200, undefined]);
    expect(await verdict({})).toEqual([false, 503, 'global']);

    // And the override the other way: a global limit with status 429.
    const global429 = createLimiter({
      clock,
      limits: [{ name: 'global', purpose: 'shedding', algorithm: 'fixed-window', limit: 1, window: '1s', key: 'global', status: 429 }],
    });
    await global429.check({});
    const d = await global429.check({});
    expect([d.allowed, d.status, d.limitName]).toEqual([false, 429, 'global']);
  });

  it('shadow limits decide and report but never enforce', async () => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter({
      clock,
      limits: [
        { name: 'new-limit', purpose: 'abuse', algorithm: 'sliding-log', limit: 2, window: '1m', key: 'ip', shadow: true },
        { name: 'old-limit', purpose: 'abuse', algorithm: 'sliding-log', limit: 4, window: '1m', key: 'ip' },
      ],
    });
    const outcomes = [];
    for (let i = 0; i < 5; i++) outcomes.push((await limiter.check({ ip: 'a' })).outcome);
    expect(outcomes).toEqual(['allowed', 'allowed', 'shadow-rejected', 'shadow-rejected', 'rejected']);
  });

  it('countRejected counts attempts rejected by another limit', async () => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter({
      clock,
      limits: [
        { name: 'account', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'principal' },
        { name: 'ip-attempts', purpose: 'abuse', algorithm: 'fixed-window', limit: 10, window: '1m', key: 'ip', countRejected: true },
      ],
    });
    await limiter.check({ ip: 'a', principal: 'u1' });
    const d = await limiter.check({ ip: 'a', principal: 'u1' });
    expect(d.allowed).toBe(false);
    expect(d.results[1]?.remaining).toBe(8);
  });

  it('a limit whose key is absent does not apply', async () => {
    const limiter = createLimiter({
      clock: new ManualClock(T0),
      limits: [{ name: 'account', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'principal' }],
    });
    const d1 = await limiter.check({ ip: 'a' });
    const d2 = await limiter.check({ ip: 'a' });
    expect([d1.allowed, d2.allowed, d2.results[0]?.source]).toEqual([true, true, 'none']);
  });

  it('a throwing key extractor never throws out of check; its requests share one conservative key', async () => {
    const limiter = createLimiter({
      clock: new ManualClock(T0),
      limits: [{ name: 'k', purpose: 'abuse', algorithm: 'fixed-window', limit: 2, window: '1m', key: () => { throw new Error('boom'); } }],
    });
    const results = [];
    for (let i = 0; i < 3; i++) results.push((await limiter.check({ ip: String(i) })).allowed);
    expect(results).toEqual([true, true, false]);
  });

  it('cost counts against every limit and a cost that can never fit says so', async () => {
    const limiter = createLimiter({
      clock: new ManualClock(T0),
      limits: [{ name: 'bytes', purpose: 'shedding', algorithm: 'token-bucket', limit: 10, window: '1s', burst: 10, key: 'ip' }],
    });
    expect((await limiter.check({ ip: 'a' }, { cost: 7 })).results[0]?.remaining).toBe(3);
    const never = await limiter.check({ ip: 'a' }, { cost: 11 });
    expect(never.allowed).toBe(false);
    expect(never.retryAfterMs).toBe(Infinity);
    await expect(limiter.check({ ip: 'a' }, { cost: 0 })).rejects.toThrow(/cost must be a positive integer/);
    await expect(limiter.check({ ip: 'a' }, { cost: 1.5 })).rejects.toThrow(/cost/);
  });

  it('leaky-bucket queue mode admits with a delay that paces requests at the rate', async () => {
    const limiter = createLimiter({
      clock: new ManualClock(T0),
      limits: [{ name: 'q', purpose: 'shedding', algorithm: 'leaky-bucket', mode: 'queue', limit: 4, window: '1s', burst: 3, key: 'global' }],
    });
    const d = [];
    for (let i = 0; i < 4; i++) d.push(await limiter.check({}));
    expect(d.map((x) => [x.allowed, x.delayMs])).toEqual([[true, 0], [true, 250], [true, 500], [false, 0]]);
    expect(d[3]?.retryAfterMs).toBe(250);
  });

  it('concurrency leases are held until released, once', async () => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter({
      clock,
      limits: [{ name: 'inflight', purpose: 'shedding', algorithm: 'concurrency', limit: 2, window: '30s', key: 'global' }],
    });
    const a = await limiter.check({});
    const b = await limiter.check({});
    const c = await limiter.check({});
    expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false]);
    expect(c.retryAfterMs).toBe(30_000);
    await a.release();
    await a.release();
    expect((await limiter.check({})).allowed).toBe(true);
    expect((await limiter.check({})).allowed).toBe(false);
    clock.advance(30_000);
    expect((await limiter.check({})).allowed).toBe(true);
  });

  it('limits on different stores: a rejection in one store gives back what the other consumed', async () => {
    const clock = new ManualClock(T0);
    const auth = memoryStore();
    const edge = memoryStore();
    const limiter = createLimiter({
      clock,
      stores: { auth, edge },
      limits: [
        { name: 'account', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'principal', store: 'auth' },
        { name: 'ip', purpose: 'shedding', algorithm: 'fixed-window', limit: 3, window: '1m', key: 'ip', store: 'edge' },
      ],
    });
    await limiter.check({ ip: 'a', principal: 'u' });
    for (let i = 0; i < 5; i++) expect((await limiter.check({ ip: 'a', principal: 'u' })).allowed).toBe(false);
    // Only the first request consumed from 'ip': 2 left for another account.
    expect((await limiter.check({ ip: 'a', principal: 'v' })).results[1]?.remaining).toBe(1);
  });
});

class DownStore implements Store {
  readonly kind = 'down';
  evaluate(): Promise<never> {
    return Promise.reject(new Error('ECONNREFUSED'));
  }
  refund(): Promise<void> {
    return Promise.reject(new Error('ECONNREFUSED'));
  }
  release(): Promise<void> {
    return Promise.reject(new Error('ECONNREFUSED'));
  }
}

describe('fail modes when a store fails (core semantics; real-Redis fault tests live in test/redis)', () => {
  it('open admits, degraded decides locally on ceil(N/k), closed decides locally on N then answers 503', async () => {
    const clock = new ManualClock(T0);
    const limiter = createLimiter({
      clock,
      defaultStore: new DownStore(),
      replicas: 4,
      limits: [
        { name: 'open', purpose: 'shedding', onError: 'open', algorithm: 'fixed-window', limit: 1, window: '1h', key: 'ip' },
      ],
    });
    for (let i = 0; i < 3; i++) {
      const d = await limiter.check({ ip: 'a' });
      expect([d.allowed, d.outcome, d.results[0]?.source]).toEqual([true, 'fail-open', 'none']);
    }

    const degraded = createLimiter({
      clock,
      defaultStore: new DownStore(),
      replicas: 4,
      limits: [{ name: 'shed', purpose: 'shedding', algorithm: 'fixed-window', limit: 10, window: '1h', key: 'global' }],
    });
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push((await degraded.check({})).allowed);
    expect(seen).toEqual([true, true, true, false]); // ceil(10/4) = 3

    const closed = createLimiter({
      clock,
      defaultStore: new DownStore(),
      limits: [{ name: 'login', purpose: 'abuse', algorithm: 'fixed-window', limit: 2, window: '1h', key: 'ip', failClosedAfter: '10s' }],
    });
    const first = await closed.check({ ip: 'a' });
    expect([first.allowed, first.outcome, first.results[0]?.source]).toEqual([true, 'degraded', 'local']);
    await closed.check({ ip: 'a' });
    expect((await closed.check({ ip: 'a' })).allowed).toBe(false);
    clock.advance(10_000);
    const hard = await closed.check({ ip: 'b' });
    expect([hard.allowed, hard.status, hard.outcome]).toEqual([false, 503, 'fail-closed']);
    expect(hard.retryAfterMs).toBeGreaterThan(0);
  });
});
