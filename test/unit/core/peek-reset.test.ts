/**
 * limiter.peek and limiter.reset on the memory store: a peek announces what
 * a check at the same instant decides (every algorithm, alone and in a
 * chain), and changes nothing (a twin limiter that never peeks decides the
 * same); reset clears one key of one limit, reports it on
 * `ratecontract:reset` with the key's hash, and refuses what it cannot do.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CHANNELS,
  createLimiter,
  ManualClock,
  memoryStore,
  StoreError,
  UsageError,
  type AlgorithmName,
  type Decision,
  type LimitDefinition,
  type ResetEvent,
  type Store,
} from '../../../packages/ratecontract/src/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const VARIANTS: ReadonlyArray<{ algorithm: AlgorithmName; queue?: boolean }> = [
  { algorithm: 'fixed-window' },
  { algorithm: 'sliding-window' },
  { algorithm: 'sliding-log' },
  { algorithm: 'token-bucket' },
  { algorithm: 'leaky-bucket' },
  { algorithm: 'leaky-bucket', queue: true },
  { algorithm: 'gcra' },
  { algorithm: 'concurrency' },
];

function limitOf(v: (typeof VARIANTS)[number], name: string, limit: number, window: number): LimitDefinition {
  const burst = v.algorithm === 'token-bucket' || v.algorithm === 'leaky-bucket' || v.algorithm === 'gcra';
  return {
    name, purpose: 'shedding', algorithm: v.algorithm, limit, window, key: 'ip',
    ...(burst ? { burst: limit + 1 } : {}), ...(v.queue === true ? { mode: 'queue' as const } : {}),
  };
}

/** The figures a peek must announce: per limit and for the chain. */
function figures(d: Decision): unknown {
  return {
    allowed: d.allowed, status: d.status, outcome: d.outcome, limit: d.limitName, retryAfterMs: d.retryAfterMs, delayMs: d.delayMs,
    results: d.results.map((r) => ({ name: r.name, allowed: r.allowed, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs })),
  };
}

const stepArb = fc.record({
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 3000 })),
  ip: fc.constantFrom('a', 'b'),
  cost: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: 3 }) }, { weight: 1, arbitrary: fc.constant(50) }),
  release: fc.boolean(),
});

describe('limiter.peek', () => {
  it.each(VARIANTS.map((v) => [`${v.algorithm}${v.queue === true ? ' (queue)' : ''}`, v] as const))(
    '%s: peek then check at the same instant agree on every figure, alone and in a chain; peeking changes nothing',
    async (_label, v) => {
      let steps = 0;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.constantFrom(700, 1000, 2500), fc.boolean(), fc.array(stepArb, { minLength: 1, maxLength: 40 }), async (limit, window, chain, script) => {
          const defs = [limitOf(v, 'first', limit, window), ...(chain ? [limitOf({ algorithm: 'fixed-window' }, 'second', limit + 2, 1000)] : [])];
          const clock = new ManualClock(1_700_000_000_000);
          const peeking = createLimiter({ clock, limits: defs });
          const twin = createLimiter({ clock, limits: defs });
          for (const step of script) {
            clock.advance(step.dt);
            const ctx = { ip: step.ip };
            const options = step.cost === 1 ? undefined : { cost: step.cost };
            const announced = await peeking.peek(ctx, options);
            const again = await peeking.peek(ctx, options);
            const decided = await peeking.check(ctx, options);
            const alone = await twin.check(ctx, options);
            expect(figures(announced)).toEqual(figures(decided));
            expect(figures(again)).toEqual(figures(announced));
            expect(figures(alone)).toEqual(figures(decided));
            if (step.release) await Promise.all([decided.release(), alone.release()]);
            steps++;
          }
        }),
        fcBudget({ runs: 60, ms: 1500 }),
      );
      expect(steps).toBeGreaterThan(100);
    },
  );

  it('publishes no decision event, takes no lease and has nothing to settle', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ clock, limits: [{ name: 'c', purpose: 'shedding', algorithm: 'concurrency', limit: 1, window: '1m', key: 'ip' }, { name: 'f', purpose: 'abuse', limit: 1, window: '1m', key: 'ip', count: 'failures' }] });
    const seen: unknown[] = [];
    const listener = (m: unknown): void => void seen.push(m);
    subscribe(CHANNELS.decision, listener);
    try {
      const p = await limiter.peek({ ip: 'x' });
      expect(p.allowed).toBe(true);
      await p.release();
      await p.settle('success');
      expect(seen).toHaveLength(0);
      // The lease a check would take is still free, the failure still uncounted.
      const d = await limiter.check({ ip: 'x' });
      expect(d.allowed).toBe(true);
      expect(seen).toHaveLength(1);
      expect((await limiter.peek({ ip: 'x' })).limitName).toBe('c');
    } finally {
      unsubscribe(CHANNELS.decision, listener);
    }
  });

  it('answers allow and deny lists as check does, before any store call', async () => {
    const limiter = createLimiter({ limits: [{ name: 'l', purpose: 'shedding', limit: 1, window: '1m', key: 'ip' }], allow: ['10.0.0.0/8'], deny: ['192.0.2.1'] });
    expect((await limiter.peek({ ip: '10.1.2.3' })).outcome).toBe('allowed-list');
    expect((await limiter.peek({ ip: '192.0.2.1' })).status).toBe(403);
  });
});

describe('limiter.reset', () => {
  it('clears one key of one limit: it starts over, other keys and limits keep their state; the event names the key by its hash', async () => {
    const clock = new ManualClock(1_000_000);
    const limiter = createLimiter({
      clock,
      limits: [
        { name: 'login', purpose: 'abuse', limit: 2, window: '15m', key: 'principal' },
        { name: 'ip', purpose: 'shedding', algorithm: 'fixed-window', limit: 3, window: '1h', key: 'ip' },
      ],
    });
    for (let i = 0; i < 3; i++) {
      await limiter.check({ principal: 'alice', ip: '203.0.113.9' });
      await limiter.check({ principal: 'bob', ip: '203.0.113.10' });
    }
    expect((await limiter.check({ principal: 'alice', ip: '203.0.113.11' })).limitName).toBe('login');
    const events: ResetEvent[] = [];
    const listener = (m: unknown): void => void events.push(m as ResetEvent);
    subscribe(CHANNELS.reset, listener);
    try {
      await limiter.reset('login', { principal: 'alice' }, { by: 'support:jo' });
      await limiter.reset('login', { principal: 'never-seen' });
    } finally {
      unsubscribe(CHANNELS.reset, listener);
    }
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ limitName: 'login', by: 'support:jo', store: '(default)' });
    expect(Object.keys(events[0] ?? {}).sort()).toEqual(['by', 'keyHash', 'limitName', 'store']);
    expect(events[0]?.keyHash).toMatch(/^#[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(events)).not.toContain('alice');
    expect(events[1]?.by).toBeUndefined();
    expect(events[1]?.keyHash).not.toBe(events[0]?.keyHash);
    expect((await limiter.peek({ principal: 'alice', ip: '203.0.113.12' })).results[0]).toMatchObject({ allowed: true, remaining: 1 });
    expect((await limiter.check({ principal: 'bob', ip: '203.0.113.12' })).limitName).toBe('login');
    // The ip limit of alice's address kept its count.
    expect((await limiter.peek({ principal: 'carol', ip: '203.0.113.9' })).results[1]).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('with keySlots, clears the slot the key decides in (the state a check reads), so the key starts over', async () => {
    const limiter = createLimiter({ clock: new ManualClock(0), limits: [{ name: 'otp', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1h', key: 'principal', keySlots: 8 }] });
    const ctx = { principal: 'alice' };
    expect((await limiter.check(ctx)).allowed).toBe(true);
    expect((await limiter.check(ctx)).allowed).toBe(false);
    await limiter.reset('otp', ctx);
    expect((await limiter.check(ctx)).allowed).toBe(true);
    await limiter.close();
  });

  it('refuses an unknown limit by name, a context without a key, an unknown option', async () => {
    const limiter = createLimiter({ limits: [{ name: 'login', purpose: 'abuse', limit: 2, window: '15m', key: 'principal' }] });
    await expect(limiter.reset('logni', { principal: 'a' })).rejects.toThrow(UsageError);
    await expect(limiter.reset('logni', { principal: 'a' })).rejects.toThrow(/"logni".*login/);
    await expect(limiter.reset('login', { ip: '1.2.3.4' })).rejects.toMatchObject({ code: 'RC_INVALID_KEY' });
    await expect(limiter.reset('login', { principal: 'a' }, { who: 'x' } as never)).rejects.toMatchObject({ code: 'RC_INVALID_OPTION' });
  });

  it('also clears the fail modes\' local state, so an unblock holds during an outage', async () => {
    const clock = new ManualClock(0);
    let failing = false;
    const inner = memoryStore();
    const store: Store = {
      kind: 'flaky',
      evaluate: (ops, now) => (failing ? Promise.reject(new Error('down')) : inner.evaluate(ops, now)),
      refund: (ops, now) => inner.refund(ops, now),
      release: (op, now) => inner.release(op, now),
      clear: (ops) => inner.clear(ops),
    };
    const limiter = createLimiter({ clock, defaultStore: store, limits: [{ name: 'l', purpose: 'abuse', limit: 1, window: '1h', key: 'ip', failClosedAfter: '1h' }] });
    failing = true;
    await limiter.check({ ip: 'k' });
    expect((await limiter.check({ ip: 'k' })).allowed).toBe(false);
    await limiter.reset('l', { ip: 'k' });
    expect((await limiter.check({ ip: 'k' })).allowed).toBe(true);
  });
});

describe('peek and reset are operator calls', () => {
  const base: Store = {
    kind: 'custom',
    evaluate: () => Promise.resolve([{ allowed: true, consumed: true, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }]),
    refund: () => Promise.resolve(),
    release: () => Promise.resolve(),
  };
  const limits: LimitDefinition[] = [{ name: 'l', purpose: 'shedding', limit: 1, window: '1m', key: 'ip' }];

  it('a store without peek or clear: a UsageError naming the store and the method', async () => {
    const limiter = createLimiter({ defaultStore: base, limits });
    await expect(limiter.peek({ ip: 'a' })).rejects.toMatchObject({ code: 'RC_UNSUPPORTED_STORE' });
    await expect(limiter.peek({ ip: 'a' })).rejects.toThrow(/"\(default\)" \(custom\).*peek\(ops, now\)/);
    await expect(limiter.reset('l', { ip: 'a' })).rejects.toMatchObject({ code: 'RC_UNSUPPORTED_STORE' });
    await expect(limiter.reset('l', { ip: 'a' })).rejects.toThrow(/clear\(ops, now\)/);
  });

  it('a failing store: a StoreError with the cause, never a fail-mode answer; a store that never answers: RC_STORE_TIMEOUT', async () => {
    const failing = createLimiter({ defaultStore: { ...base, peek: () => Promise.reject(new Error('connection lost')), clear: () => Promise.reject(new Error('connection lost')) }, limits });
    const p = failing.peek({ ip: 'a' });
    await expect(p).rejects.toBeInstanceOf(StoreError);
    await expect(p).rejects.toMatchObject({ code: 'RC_STORE_FAILURE', store: '(default)', cause: { message: 'connection lost' } });
    await expect(failing.reset('l', { ip: 'a' })).rejects.toMatchObject({ code: 'RC_STORE_FAILURE' });
    const hung = createLimiter({ defaultStore: { ...base, deadlineMs: 5, peek: () => new Promise(() => undefined) }, limits });
    const started = Date.now();
    await expect(hung.peek({ ip: 'a' })).rejects.toMatchObject({ code: 'RC_STORE_TIMEOUT' });
    // max(deadlineMs, 1000): an operator call is not held to a request's deadline.
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
  });
});
