/**
 * One payload per channel, the same at every publish site: each channel is
 * provoked from each of its sites (store-error from an evaluate, a refund, a
 * release and a heartbeat; for every reason), and every payload seen carries
 * exactly the fields `EVENT_FIELDS` declares for it.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EVENT_FIELDS } from '../../../packages/ratecontract/src/core/events.js';
import { CHANNELS, createLimiter, ManualClock, memoryStore, type Store, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';

const T0 = 1_700_000_000_000;

/** A memory store that can fail, hang, or fail its heartbeat. */
class Flaky implements Store {
  readonly kind = 'flaky';
  readonly inner = memoryStore();
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  readonly deadlineMs = 20;
  readonly breaker = { failureThreshold: 2, cooldownMs: 1000 };
  readonly maxInFlight = 3;
  evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    if (this.mode === 'fail') return Promise.reject(new Error('ECONNREFUSED'));
    if (this.mode === 'hang') return new Promise(() => undefined);
    return this.inner.evaluate(ops, now);
  }
  refund(ops: readonly StoreOp[], now: number): Promise<void> {
    if (this.mode !== 'ok') return Promise.reject(new Error('ECONNREFUSED'));
    return this.inner.refund(ops, now);
  }
  release(op: StoreOp, now: number): Promise<void> {
    if (this.mode !== 'ok') return Promise.reject(new Error('ECONNREFUSED'));
    return this.inner.release(op, now);
  }
  heartbeat(): Promise<number> {
    return this.mode === 'ok' ? Promise.resolve(2) : Promise.reject(new Error('ECONNREFUSED'));
  }
}

function thrower(): never {
  throw new Error('list lookup failed');
}

const seen: Array<{ channel: keyof typeof CHANNELS; payload: Record<string, unknown> }> = [];
const subscriptions: Array<[string, (m: unknown) => void]> = [];
for (const key of Object.keys(CHANNELS) as Array<keyof typeof CHANNELS>) {
  const fn = (m: unknown): void => void seen.push({ channel: key, payload: m as Record<string, unknown> });
  subscribe(CHANNELS[key], fn);
  subscriptions.push([CHANNELS[key], fn]);
}
afterEach(() => {
  seen.length = 0;
});
// The subscriptions end with this file: a worker may run other files after it (npm test keeps modules across files).
afterAll(() => {
  for (const [name, fn] of subscriptions) unsubscribe(name, fn);
});

describe('event payloads', () => {
  it('every channel, from every publish site, carries exactly its declared fields', async () => {
    const clock = new ManualClock(T0);
    const flaky = new Flaky();
    const healthy = memoryStore();
    const limiter = createLimiter({
      clock,
      replicas: 'discover',
      heartbeatMs: 10,
      defaultStore: flaky,
      stores: { other: healthy },
      // list-error, from the limiter's list and a limit's
      deny: [(c) => (c.ip === 'boom' ? thrower() : false)],
      limits: [
        { name: 'login', purpose: 'abuse', algorithm: 'gcra', limit: 5, window: '15m', key: 'principal', failClosedAfter: '1s', allow: [(c) => (c.ip === 'boom' ? thrower() : false)] },
        { name: 'inflight', purpose: 'shedding', algorithm: 'concurrency', limit: 5, window: '30s', key: 'principal' },
        { name: 'tight', purpose: 'shedding', algorithm: 'fixed-window', limit: 1, window: '1h', key: 'ip', store: 'other' },
        { name: 'throws', purpose: 'shedding', algorithm: 'fixed-window', limit: 100, window: '1h', key: () => { throw new Error('token expired'); } },
      ],
    });
    await (await limiter.check({ principal: 'u', ip: 'boom' })).release();
    // cost-error (its own limiter, so the chain above keeps its figures)
    await createLimiter({ limits: [{ name: 'priced', purpose: 'shedding', limit: 5, window: '1m', cost: () => thrower() }] }).check({ ip: 'a' });
    // decision, key-error, replicas (heartbeat answers 2)
    const ok = await limiter.check({ principal: 'u', ip: 'a' });
    await new Promise((r) => setTimeout(r, 30));
    // refund failure: 'tight' on the other store rejects, so the flaky store must give back; it fails meanwhile.
    flaky.mode = 'fail';
    // release failure (store-error from a release)
    await ok.release();
    await limiter.check({ principal: 'u', ip: 'a' });
    // store-error 'error', fallback; then the breaker opens (breaker), 'breaker-open'
    for (let i = 0; i < 3; i++) await limiter.check({ principal: 'u' });
    // fail-closed after the grace period
    clock.advance(1500);
    await limiter.check({ principal: 'u' });
    // timeouts and 'busy': a fresh limiter on a hanging store
    const hanging = new Flaky();
    hanging.mode = 'hang';
    const second = createLimiter({ clock, defaultStore: hanging, limits: [{ name: 'shed', purpose: 'shedding', limit: 10, window: '1s', key: 'principal' }] });
    await Promise.all(Array.from({ length: 4 }, (_, i) => second.check({ principal: `p${i}` })));
    // dead-connection: its calls have now been outstanding, unanswered, for longer than deadConnectionMs (2 s)
    clock.advance(2500);
    await second.check({ principal: 'p0' });
    // reset (with and without `by`) and plan-error (an unknown plan, a throwing plan function)
    const planned = createLimiter({
      limits: [{ name: 'tenant', purpose: 'shedding', limit: 5, window: '1m', key: 'ip', plan: 'header.x-plan', plans: { free: {} } }],
    });
    await planned.check({ ip: 'a', headers: { 'x-plan': 'gold' } });
    await createLimiter({ limits: [{ name: 'p', purpose: 'shedding', limit: 5, window: '1m', key: 'ip', plan: () => thrower(), plans: { free: {} } }] }).check({ ip: 'a' });
    await planned.reset('tenant', { ip: 'a' }, { by: 'ops' });
    await planned.reset('tenant', { ip: 'a' });
    // shadow: a shadowed limit's period moves on by a bucket (10 min of the default hour)
    const shadowed = createLimiter({ clock, limits: [{ name: 'trial', purpose: 'shedding', limit: 1, window: '1m', key: 'ip', shadow: true }] });
    await shadowed.check({ ip: 'a' });
    await shadowed.check({ ip: 'a' });
    clock.advance(600_000);
    await shadowed.check({ ip: 'a' });
    // heartbeat failure
    await new Promise((r) => setTimeout(r, 30));
    await limiter.close();

    const channels = new Set(seen.map((e) => e.channel));
    expect([...channels].sort()).toEqual((Object.keys(CHANNELS)).sort());
    const reasons = new Set(seen.filter((e) => e.channel === 'storeError').map((e) => e.payload.reason));
    expect([...reasons].sort()).toEqual(['breaker-open', 'busy', 'error', 'timeout']);
    for (const e of seen) expect(Object.keys(e.payload).sort(), `${e.channel}: ${JSON.stringify(Object.keys(e.payload))}`).toEqual([...EVENT_FIELDS[e.channel]].sort());
    // store-error's limits is always a list of limit names; store is always a name.
    for (const e of seen.filter((x) => x.channel === 'storeError')) {
      expect(Array.isArray(e.payload.limits)).toBe(true);
      expect(typeof e.payload.store).toBe('string');
      expect(typeof e.payload.kind).toBe('string');
    }
  });
});
