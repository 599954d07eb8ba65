import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CHANNELS, createLimiter, ManualClock, memoryStore, type Store, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';

const T0 = 1_700_000_000_000;

/** A store in front of a real memory store that can be switched to hang (never answer) or fail. Counts calls. */
class SwitchableStore implements Store {
  readonly kind = 'switchable';
  readonly inner = memoryStore();
  mode: 'ok' | 'hang' | 'fail' = 'ok';
  calls = 0;
  readonly deadlineMs: number;
  readonly breaker = { failureThreshold: 3, cooldownMs: 1000 };
  constructor(deadlineMs = 20) {
    this.deadlineMs = deadlineMs;
  }
  evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    this.calls++;
    if (this.mode === 'hang') return new Promise(() => undefined);
    if (this.mode === 'fail') return Promise.reject(new Error('READONLY You can\'t write against a read only replica.'));
    return this.inner.evaluate(ops, now);
  }
  refund(ops: readonly StoreOp[], now: number): Promise<void> {
    return this.inner.refund(ops, now);
  }
  release(op: StoreOp, now: number): Promise<void> {
    if (this.mode === 'hang') return new Promise(() => undefined);
    return this.inner.release(op, now);
  }
}

const subscriptions: Array<[string, (m: unknown) => void]> = [];
function listen(name: string): unknown[] {
  const seen: unknown[] = [];
  const fn = (m: unknown): void => void seen.push(m);
  subscribe(name, fn);
  subscriptions.push([name, fn]);
  return seen;
}
afterEach(() => {
  for (const [name, fn] of subscriptions.splice(0)) unsubscribe(name, fn);
  vi.useRealTimers();
});

/**
 * The store deadline is a real timer (`setTimeout`, then one `setImmediate`
 * so a reply that arrived during a stall still wins). Tests of the deadline
 * fake `setTimeout` only, and check "cut off at 20 ms" as: still pending
 * after 19 ms of timer time and ten event-loop turns; settled at
 * 20 ms within a few turns and no more timer time. No wall-clock duration
 * is measured, so a loaded machine cannot stretch or shrink the verdict.
 */
async function fakeDeadlineTimers(): Promise<void> {
  // Deadlines set in one pass of the event loop share one timer (withDeadline): let the pass end first, so that
  // the next deadline starts a timer of its own, a fake one.
  await turns(1);
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
}

/** Lets the event loop turn (real `setImmediate`) up to `max` times, or until `done()`. */
async function turns(max: number, done: () => boolean = () => false): Promise<void> {
  for (let i = 0; i < max && !done(); i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** `promise` is still pending `deadlineMs - 1` ms of timer time after it started, and settles at `deadlineMs`. */
async function settlesAtDeadline<T>(promise: Promise<T>, deadlineMs: number): Promise<T> {
  let settled = false;
  promise.then(
    () => void (settled = true),
    () => void (settled = true),
  );
  await vi.advanceTimersByTimeAsync(deadlineMs - 1);
  await turns(10);
  expect(settled, `settled before the ${deadlineMs} ms deadline`).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  await turns(10, () => settled);
  expect(settled, `still pending at the ${deadlineMs} ms deadline`).toBe(true);
  return promise;
}

describe('store deadline and circuit breaker', () => {
  it('a hung store is cut off by the deadline, then skipped while the breaker is open, then probed and trusted again', async () => {
    const clock = new ManualClock(T0);
    const store = new SwitchableStore(20);
    const limiter = createLimiter({
      clock,
      defaultStore: store,
      limits: [{ name: 'shed', purpose: 'shedding', algorithm: 'fixed-window', limit: 100, window: '1h', key: 'global' }],
    });
    const timeouts = listen(CHANNELS.timeout);
    const transitions = listen(CHANNELS.breaker);
    expect((await limiter.check({})).outcome).toBe('allowed');

    await fakeDeadlineTimers();
    store.mode = 'hang';
    for (let i = 0; i < 3; i++) {
      // The store never answers: the check waits exactly its 20 ms deadline, then answers from the local fallback.
      const d = await settlesAtDeadline(limiter.check({}), 20);
      expect([d.allowed, d.outcome, d.results[0]?.source]).toEqual([true, 'degraded', 'local']);
      expect(timeouts).toHaveLength(i + 1);
    }
    vi.useRealTimers();
    expect(limiter.breakerStates()).toEqual({ '(default)': 'open' });
    const callsWhenOpened = store.calls;

    // Open: the store is not called at all, so a dead store costs no latency.
    for (let i = 0; i < 50; i++) expect((await limiter.check({})).outcome).toBe('degraded');
    expect(store.calls).toBe(callsWhenOpened);

    // After the cool-down probes go through one at a time; three good ones in a row close the breaker.
    store.mode = 'ok';
    clock.advance(1000);
    for (let probe = 1; probe <= 3; probe++) {
      expect((await limiter.check({})).outcome).toBe('allowed');
      expect(limiter.breakerStates()).toEqual({ '(default)': probe < 3 ? 'half-open' : 'closed' });
    }
    expect(transitions.map((t) => (t as { to: string }).to)).toEqual(['open', 'half-open', 'closed']);
  });

  it('a failed probe reopens the breaker for another cool-down', async () => {
    const clock = new ManualClock(T0);
    const store = new SwitchableStore();
    store.mode = 'fail';
    const limiter = createLimiter({
      clock,
      defaultStore: store,
      limits: [{ name: 'shed', purpose: 'shedding', algorithm: 'fixed-window', limit: 100, window: '1h', key: 'global' }],
    });
    for (let i = 0; i < 3; i++) await limiter.check({});
    expect(limiter.breakerStates()['(default)']).toBe('open');
    clock.advance(1000);
    await limiter.check({});
    expect(store.calls).toBe(4);
    expect(limiter.breakerStates()['(default)']).toBe('open');
    await limiter.check({});
    expect(store.calls).toBe(4);
  });

  it('releasing a lease on a hung store resolves within the deadline', async () => {
    const clock = new ManualClock(T0);
    const store = new SwitchableStore(20);
    const limiter = createLimiter({
      clock,
      defaultStore: store,
      limits: [{ name: 'inflight', purpose: 'shedding', algorithm: 'concurrency', limit: 5, window: '30s', key: 'global' }],
    });
    const errors = listen(CHANNELS.storeError);
    const d = await limiter.check({});
    expect(d.results[0]?.source).toBe('store');
    store.mode = 'hang';
    await fakeDeadlineTimers();
    await settlesAtDeadline(d.release(), 20);
    // It was the deadline that ended it (the lease is left to expire).
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ reason: 'timeout' });
  });

  it('closed limits reject with 503 once the store has failed continuously for failClosedAfter', async () => {
    const clock = new ManualClock(T0);
    const store = new SwitchableStore();
    store.mode = 'fail';
    const failClosed = listen(CHANNELS.failClosed);
    const limiter = createLimiter({
      clock,
      defaultStore: store,
      failClosedRetryAfterMs: 2000,
      limits: [{ name: 'login', purpose: 'abuse', algorithm: 'fixed-window', limit: 5, window: '15m', key: 'principal', failClosedAfter: '5s' }],
    });
    expect((await limiter.check({ principal: 'u' })).outcome).toBe('degraded');
    clock.advance(4999);
    expect((await limiter.check({ principal: 'u' })).outcome).toBe('degraded');
    clock.advance(1);
    const d = await limiter.check({ principal: 'u' });
    expect([d.allowed, d.status, d.outcome, d.retryAfterMs]).toEqual([false, 503, 'fail-closed', 2000]);
    expect(failClosed).toHaveLength(1);
    // Recovery: the next successful store call ends the failure run.
    store.mode = 'ok';
    clock.advance(1000);
    expect((await limiter.check({ principal: 'u' })).outcome).toBe('allowed');
  });

  it('failClosedAfter 0 is hard-closed at once', async () => {
    const store = new SwitchableStore();
    store.mode = 'fail';
    const limiter = createLimiter({
      clock: new ManualClock(T0),
      defaultStore: store,
      limits: [{ name: 'login', purpose: 'abuse', algorithm: 'gcra', limit: 5, window: '15m', key: 'principal', failClosedAfter: 0 }],
    });
    expect((await limiter.check({ principal: 'u' })).outcome).toBe('fail-closed');
  });
});

describe('replica discovery', () => {
  it('limiters sharing a store discover each other and degraded limits divide by the live count', async () => {
    const store = memoryStore();
    const limits = [{ name: 'shed', purpose: 'shedding' as const, algorithm: 'fixed-window' as const, limit: 10, window: '1h' as const, key: 'global' as const }];
    const seen = listen(CHANNELS.replicas);
    const a = createLimiter({ defaultStore: store, limits, replicas: 'discover', heartbeatMs: 20 });
    const b = createLimiter({ defaultStore: store, limits, replicas: 'discover', heartbeatMs: 20 });
    const deadline = Date.now() + 5000;
    while ((a.replicas !== 2 || b.replicas !== 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect([a.replicas, b.replicas]).toEqual([2, 2]);
    expect(seen.length).toBeGreaterThan(0);
    await a.close();
    await b.close();
  });

  it("'discover' needs a store that can heartbeat", () => {
    const noHeartbeat = new SwitchableStore();
    expect(() =>
      createLimiter({
        defaultStore: noHeartbeat,
        replicas: 'discover',
        limits: [{ name: 'shed', purpose: 'shedding', limit: 1, window: '1s', key: 'global' }],
      }),
    ).toThrow(/replicas: 'discover' needs a default store with heartbeat/);
  });
});
