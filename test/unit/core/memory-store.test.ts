import { describe, expect, it } from 'vitest';
import { createLimiter, ManualClock, memoryStore } from '../../../packages/ratecontract/src/index.js';
import { boundKey } from '../../../packages/ratecontract/src/core/request-key.js';

const T0 = 1_700_000_000_000;

describe('memory store', () => {
  it('a flood of 1,000,000 distinct keys stays under the cap and cannot reset an existing counter', async () => {
    const clock = new ManualClock(T0);
    const store = memoryStore({ maxKeys: 50_000, overflowSlots: 1024 });
    const limiter = createLimiter({
      clock,
      defaultStore: store,
      limits: [{ name: 'login', purpose: 'abuse', algorithm: 'fixed-window', limit: 3, window: '1h', key: 'principal' }],
    });
    for (let i = 0; i < 3; i++) expect((await limiter.check({ principal: 'victim' })).allowed).toBe(true);
    expect((await limiter.check({ principal: 'victim' })).allowed).toBe(false);

    if (typeof global.gc !== "function") throw new Error("run with --expose-gc (vitest.config.ts sets it)");
    global.gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1_000_000; i++) {
      await limiter.check({ principal: `attacker-${i}` });
      if (i % 100_000 === 0) clock.advance(1);
    }
    if (typeof global.gc !== "function") throw new Error("run with --expose-gc (vitest.config.ts sets it)");
    global.gc();
    const grown = process.memoryUsage().heapUsed - before;

    expect(store.size).toBeLessThanOrEqual(50_000);
    expect(store.overflowSize).toBeLessThanOrEqual(1024);
    // 51,024 entries at well under 1 KB each; without the cap 1,000,000 entries would need ~100 MB.
    expect(grown).toBeLessThan(40 * 1024 * 1024);
    // The victim's counter survived the flood.
    const after = await limiter.check({ principal: 'victim' });
    expect(after.allowed).toBe(false);
    expect(after.results[0]?.remaining).toBe(0);
  });

  it('keys that overflow are counted conservatively: a repeated overflow key is still limited', async () => {
    const clock = new ManualClock(T0);
    const store = memoryStore({ maxKeys: 10, overflowSlots: 4 });
    const limiter = createLimiter({
      clock,
      defaultStore: store,
      limits: [{ name: 'otp', purpose: 'abuse', algorithm: 'fixed-window', limit: 3, window: '15m', key: 'body.phone' }],
    });
    for (let i = 0; i < 10; i++) await limiter.check({ body: { phone: `filler-${i}` } });
    expect(store.size).toBe(10);
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push((await limiter.check({ body: { phone: '+15550100' } })).allowed);
    expect(seen).toEqual([true, true, true, false, false]);
    // When room frees up, the key's own entry starts from its slot's count, never from zero.
    clock.advance(60_000);
    store.reset('otp:fixed-window', 'filler-0');
    expect((await limiter.check({ body: { phone: '+15550100' } })).allowed).toBe(false);
  });

  it('reclaims expired state without a timer per key', async () => {
    const clock = new ManualClock(T0);
    const store = memoryStore({ maxKeys: 1000 });
    const limiter = createLimiter({
      clock,
      defaultStore: store,
      limits: [{ name: 'ip', purpose: 'shedding', algorithm: 'gcra', limit: 10, window: '1s', key: 'ip' }],
    });
    for (let i = 0; i < 500; i++) await limiter.check({ ip: `a${i}` });
    expect(store.size).toBe(500);
    clock.advance(2000);
    // New traffic sweeps old entries as it inserts.
    for (let i = 0; i < 500; i++) await limiter.check({ ip: `b${i}` });
    expect(store.size).toBeLessThan(600);
    // A full store reclaims expired entries before it overflows anyone.
    clock.advance(2000);
    for (let i = 0; i < 1000; i++) await limiter.check({ ip: `c${i}` });
    expect(store.overflowSize).toBe(0);
    expect(store.size).toBeLessThanOrEqual(1000);
  });

  it('keys of any content and length work and are bounded', async () => {
    const clock = new ManualClock(T0);
    const store = memoryStore();
    const limiter = createLimiter({
      clock,
      defaultStore: store,
      limits: [{ name: 'h', purpose: 'abuse', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'header.x-key' }],
    });
    const hostile = ['x'.repeat(10_240), 'a\u0000b', 'a\r\nSet-Cookie: x=1', '用户🙂', '', ' '];
    for (const key of hostile) {
      const first = await limiter.check({ headers: { 'x-key': key } });
      const second = await limiter.check({ headers: { 'x-key': key } });
      expect([first.allowed, second.allowed]).toEqual([true, false]);
    }
    expect(store.size).toBe(hostile.length);
    expect(boundKey('x'.repeat(10_240)).length).toBeLessThanOrEqual(64);
    expect(boundKey('x'.repeat(10_240))).not.toBe(boundKey('x'.repeat(10_239)));
    expect(boundKey('short')).toBe('short');
  });
});
