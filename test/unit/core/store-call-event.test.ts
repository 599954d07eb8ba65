import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CHANNELS, createLimiter, memoryStore, type LimitDefinition, type Store, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';

interface StoreCall {
  readonly store: string;
  readonly kind: string;
  readonly durationMs: number;
  readonly ok: boolean;
}

/** An asynchronous store over a memory store that answers after `delayMs` of real time, or fails. */
class SlowStore implements Store {
  readonly kind = 'slow';
  readonly inner = memoryStore();
  readonly deadlineMs = 200;
  readonly breaker = { failureThreshold: 2, cooldownMs: 60_000 };
  mode: 'ok' | 'fail' = 'ok';
  calls = 0;
  constructor(readonly delayMs: number) {}
  async evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    this.calls++;
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (this.mode === 'fail') throw new Error('connection reset');
    return this.inner.evaluate(ops, now);
  }
  refund(ops: readonly StoreOp[], now: number): Promise<void> {
    return this.inner.refund(ops, now);
  }
  release(op: StoreOp, now: number): Promise<void> {
    return this.inner.release(op, now);
  }
}

const subscriptions: Array<() => void> = [];
function listen(): StoreCall[] {
  const seen: StoreCall[] = [];
  const fn = (m: unknown): void => void seen.push(m as StoreCall);
  subscribe(CHANNELS.storeCall, fn);
  subscriptions.push(() => unsubscribe(CHANNELS.storeCall, fn));
  return seen;
}
afterEach(() => {
  for (const off of subscriptions.splice(0)) off();
  vi.restoreAllMocks();
});

const perIp: LimitDefinition = { name: 'per-ip', purpose: 'shedding', limit: 100, window: '1m', key: 'ip' };
const limits: LimitDefinition[] = [{ ...perIp, store: 'slow' }];

describe('ratecontract:store-call', () => {
  it('reports each store call made, with its store, kind, duration and whether it answered', async () => {
    const store = new SlowStore(15);
    const limiter = createLimiter({ limits, stores: { slow: store } });
    const seen = listen();
    await limiter.check({ ip: '192.0.2.1' });
    store.mode = 'fail';
    await limiter.check({ ip: '192.0.2.1' });
    expect(seen).toHaveLength(2);
    expect(seen.map(({ store: s, kind, ok }) => ({ s, kind, ok }))).toEqual([
      { s: 'slow', kind: 'slow', ok: true },
      { s: 'slow', kind: 'slow', ok: false },
    ]);
    // A lower bound only: timers may fire late on a loaded machine, never early (allow 1 ms of timer rounding).
    for (const e of seen) expect(e.durationMs).toBeGreaterThanOrEqual(14);
  });

  it('is silent for calls never made (open breaker) and for in-process stores', async () => {
    const store = new SlowStore(1);
    store.mode = 'fail';
    const limiter = createLimiter({ limits, stores: { slow: store } });
    const seen = listen();
    await limiter.check({ ip: '192.0.2.1' });
    await limiter.check({ ip: '192.0.2.1' });
    expect(limiter.breakerStates().slow).toBe('open');
    await limiter.check({ ip: '192.0.2.1' });
    expect(store.calls).toBe(2);
    expect(seen).toHaveLength(2);

    const local = createLimiter({ limits: [perIp] });
    await local.check({ ip: '192.0.2.1' });
    expect(seen).toHaveLength(2);
  });

  it('costs no clock read while nobody listens', async () => {
    const store = new SlowStore(1);
    const limiter = createLimiter({ limits, stores: { slow: store } });
    const now = vi.spyOn(performance, 'now');
    await limiter.check({ ip: '192.0.2.1' });
    expect(store.calls).toBe(1);
    expect(now).not.toHaveBeenCalled();
    listen();
    await limiter.check({ ip: '192.0.2.1' });
    expect(now).toHaveBeenCalledTimes(2);
  });
});
