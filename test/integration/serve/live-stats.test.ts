import { channel } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, createLimiter, ManualClock, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';
import { LATENCY_WINDOW_MS, LiveStats } from '../../../packages/cli/src/host/live-stats.js';
import { SwitchableStore } from '../../unit/metrics/helpers.js';

const T0 = 1_700_000_000_000;
const open: LiveStats[] = [];
function stats(now: () => number, windowMs = 10_000): LiveStats {
  const s = new LiveStats({ windowMs, now });
  open.push(s);
  return s;
}
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

const perIp: LimitDefinition = { name: 'per-ip', purpose: 'shedding', limit: 2, window: '1m', key: 'ip' };
const shadow: LimitDefinition = { name: 'shadow-user', purpose: 'abuse', limit: 1, window: '1m', key: 'principal', shadow: true };

describe('LiveStats', () => {
  it('counts admitted, rejected and shadow-rejected per limit and second, over a bounded window', async () => {
    let now = T0 + 500;
    const live = stats(() => now);
    const limiter = createLimiter({ limits: [perIp, shadow], clock: new ManualClock(T0) });
    for (let i = 0; i < 3; i++) await limiter.check({ ip: '192.0.2.1', principal: 'u' });
    now += 1000;
    await limiter.check({ ip: '192.0.2.1' });
    const snap = live.snapshot([{ name: 'POST /otp', limiter }]);
    expect(snap.windowMs).toBe(10_000);
    expect(snap.stepMs).toBe(1000);
    expect(snap.replicas).toBe(1);
    const ip = snap.limits.find((l) => l.name === 'per-ip');
    expect(ip).toMatchObject({ limiters: ['POST /otp'], purpose: 'shedding', onError: 'degraded', shadow: false, store: '(default)' });
    expect(ip?.series.admitted).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
    expect(ip?.series.rejected).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
    expect(ip?.totals).toEqual({ admitted: 2, rejected: 2, shadowRejected: 0, fallback: 0 });
    const sh = snap.limits.find((l) => l.name === 'shadow-user');
    expect(sh?.totals).toEqual({ admitted: 1, rejected: 0, shadowRejected: 2, fallback: 0 });

    now += 9000;
    const later = live.snapshot([{ name: 'POST /otp', limiter }]).limits.find((l) => l.name === 'per-ip');
    expect(later?.series.rejected).toEqual([1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    now += 1000;
    expect(live.snapshot([{ name: 'POST /otp', limiter }]).limits.find((l) => l.name === 'per-ip')?.totals.rejected).toBe(0);
  });

  it('counts fallback decisions and fail-closed rejections, and reports store health across limiters', async () => {
    const now = T0;
    const live = stats(() => now);
    const store = new SwitchableStore(0, 50);
    store.mode = 'fail';
    const closed: LimitDefinition = { name: 'closed-limit', purpose: 'abuse', onError: 'closed', failClosedAfter: 0, limit: 5, window: '1m', key: 'ip', store: 'remote' };
    const degraded: LimitDefinition = { name: 'degraded-limit', purpose: 'shedding', limit: 5, window: '1m', key: 'ip', store: 'remote' };
    const a = createLimiter({ limits: [closed], stores: { remote: store } });
    const b = createLimiter({ limits: [degraded, perIp], stores: { remote: store } });
    for (let i = 0; i < 3; i++) await a.check({ ip: '192.0.2.1' });
    await b.check({ ip: '192.0.2.1' });
    const snap = live.snapshot([
      { name: 'a', limiter: a },
      { name: 'b', limiter: b },
    ]);
    expect(snap.limits.map((l) => l.name)).toEqual(['closed-limit', 'degraded-limit', 'per-ip']);
    expect(snap.limits[0]?.totals).toEqual({ admitted: 0, rejected: 3, shadowRejected: 0, fallback: 3 });
    expect(snap.limits[1]?.totals).toEqual({ admitted: 1, rejected: 0, shadowRejected: 0, fallback: 1 });
    const remote = snap.stores.find((s) => s.name === 'remote');
    // Limiter a's breaker opened after 3 failures; b's has seen one. The store shows at its worst.
    expect(remote).toMatchObject({ state: 'open', ready: true, calls: 4, failureRate: 1, inFlight: 0, latencySamples: 4 });
    expect(remote?.p99Ms).toBeGreaterThanOrEqual(0);
    // b's chain spans two stores, so its memory store is called through its guard (asynchronously) and timed too.
    expect(snap.stores.find((s) => s.name === '(default)')).toMatchObject({ state: 'closed', latencySamples: 1 });
    // A chain on one in-process store is decided synchronously: no store call, no latency.
    const solo = createLimiter({ limits: [perIp] });
    const fresh = stats(() => now);
    await solo.check({ ip: '192.0.2.1' });
    expect(fresh.snapshot([{ name: 'solo', limiter: solo }]).stores).toEqual([
      { name: '(default)', state: 'closed', failureRate: 0, calls: 0, inFlight: 0, ready: true, p99Ms: null, latencySamples: 0 },
    ]);
  });

  it('takes p99 store latency over the calls of the last minute', () => {
    let now = T0;
    const live = stats(() => now);
    const limiter = createLimiter({ limits: [{ ...perIp, store: 'remote' }], stores: { remote: new SwitchableStore() } });
    const calls = channel(CHANNELS.storeCall);
    for (let ms = 1; ms <= 200; ms++) calls.publish({ store: 'remote', kind: 'switchable', durationMs: ms, ok: true });
    const p99 = (): unknown => live.snapshot([{ name: 'x', limiter }]).stores.find((s) => s.name === 'remote');
    expect(p99()).toMatchObject({ p99Ms: 198, latencySamples: 200 });
    now += LATENCY_WINDOW_MS / 2;
    calls.publish({ store: 'remote', kind: 'switchable', durationMs: 3, ok: true });
    now += LATENCY_WINDOW_MS / 2 + 1;
    expect(p99()).toMatchObject({ p99Ms: 3, latencySamples: 1 });
  });

  it('refuses a window that is not whole seconds from 10 s to 1 h; close() stops counting', async () => {
    for (const windowMs of [0, 9_999, 10_500, 3_600_001, Number.NaN]) expect(() => new LiveStats({ windowMs })).toThrow(/windowMs/);
    const live = stats(() => T0);
    const limiter = createLimiter({ limits: [perIp] });
    live.close();
    live.close();
    await limiter.check({ ip: '192.0.2.1' });
    expect(live.snapshot([{ name: 'x', limiter }]).limits[0]?.totals.admitted).toBe(0);
    const byDefault = new LiveStats();
    open.push(byDefault);
    expect(byDefault.windowMs).toBe(300_000);
  });
});
