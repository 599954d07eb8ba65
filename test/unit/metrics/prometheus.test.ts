import fc from 'fast-check';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLimiter, ManualClock, type LimitDefinition, type Limiter } from '../../../packages/ratecontract/src/index.js';
import { OUTCOMES, prometheusMetrics, SERIES, SERIES_INFO, STORE_DURATION_BUCKETS, STORE_ERROR_KINDS, type PrometheusMetrics } from '../../../packages/ratecontract/src/metrics/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';
import { parseExposition, sampleValue, SwitchableStore, type Sample } from './helpers.js';

const T0 = 1_700_000_000_000;
const open: PrometheusMetrics[] = [];
function bind(registry: Registry, limiters?: () => Iterable<Limiter>): PrometheusMetrics {
  const m = prometheusMetrics({ registry, ...(limiters !== undefined && { limiters }) });
  open.push(m);
  return m;
}
afterEach(() => {
  for (const m of open.splice(0)) m.close();
});

async function scrape(registry: Registry): Promise<Sample[]> {
  return parseExposition(await registry.metrics()).samples;
}

const perIp: LimitDefinition = { name: 'per-ip', purpose: 'shedding', limit: 2, window: '1m', key: 'ip' };
const shadowUser: LimitDefinition = { name: 'user-shadow', purpose: 'abuse', limit: 1, window: '1m', key: 'principal', shadow: true };

describe('prometheusMetrics', () => {
  it('registers every series under its stable name and type', async () => {
    const registry = new Registry();
    const m = bind(registry);
    expect(m.registry).toBe(registry);
    const { types } = parseExposition(await registry.metrics());
    expect(Object.fromEntries(types)).toEqual(Object.fromEntries(SERIES_INFO.map((s) => [s.name, s.type])));
    expect(Object.values(SERIES).sort()).toEqual([
      'ratecontract_breaker_open',
      'ratecontract_decisions_total',
      'ratecontract_fail_closed_total',
      'ratecontract_fallback_decisions_total',
      'ratecontract_replicas',
      'ratecontract_store_duration_seconds',
      'ratecontract_store_errors_total',
    ]);
  });

  it('counts each limit\'s verdict by outcome, skipping limits that did not apply', async () => {
    const registry = new Registry();
    bind(registry);
    const limiter = createLimiter({ limits: [perIp, shadowUser], clock: new ManualClock(T0) });
    for (let i = 0; i < 3; i++) await limiter.check({ ip: '192.0.2.1', principal: 'u1' });
    await limiter.check({ ip: '192.0.2.9' });
    const s = await scrape(registry);
    const d = (limit: string, outcome: string): number | undefined => sampleValue(s, SERIES.decisions, { limit, outcome });
    expect([d('per-ip', 'allowed'), d('per-ip', 'rejected')]).toEqual([3, 1]);
    expect([d('user-shadow', 'allowed'), d('user-shadow', 'shadow-rejected')]).toEqual([1, 2]);
    // Without `limiters`, a limit's series appear with its first decision: every outcome, at 0 where none happened.
    expect(d('per-ip', 'degraded')).toBe(0);
    expect(s.filter((x) => x.name === SERIES.decisions)).toHaveLength(2 * OUTCOMES.length);
  });

  it('counts store errors by kind, fail-mode decisions, fail-closed rejections, breaker state and store call time', async () => {
    const store = new SwitchableStore(0, 50);
    const limits: LimitDefinition[] = [
      { name: 'closed-limit', purpose: 'abuse', onError: 'closed', failClosedAfter: 0, limit: 10, window: '1m', key: 'ip', store: 'remote' },
      { name: 'degraded-limit', purpose: 'shedding', onError: 'degraded', limit: 10, window: '1m', key: 'ip', store: 'remote' },
      { name: 'open-limit', purpose: 'shedding', onError: 'open', limit: 10, window: '1m', key: 'ip', store: 'remote' },
    ];
    const limiter = createLimiter({ limits, stores: { remote: store } });
    const withLimiters = new Registry();
    const fromEvents = new Registry();
    bind(withLimiters, () => [limiter]);
    bind(fromEvents);

    await limiter.check({ ip: '192.0.2.1' });
    let s = await scrape(withLimiters);
    expect(sampleValue(s, SERIES.breakerOpen, { store: 'remote' })).toBe(0);
    expect(sampleValue(s, SERIES.storeDuration + '_count', { store: 'remote' })).toBe(1);

    store.mode = 'fail';
    for (let i = 0; i < 4; i++) await limiter.check({ ip: '192.0.2.1' });
    for (const registry of [withLimiters, fromEvents]) {
      s = await scrape(registry);
      expect(sampleValue(s, SERIES.storeErrors, { store: 'remote', kind: 'error' })).toBe(3);
      expect(sampleValue(s, SERIES.storeErrors, { store: 'remote', kind: 'breaker-open' })).toBe(1);
      expect(sampleValue(s, SERIES.breakerOpen, { store: 'remote' })).toBe(1);
      for (const limit of ['closed-limit', 'degraded-limit', 'open-limit']) expect(sampleValue(s, SERIES.fallbackDecisions, { limit })).toBe(4);
      expect(sampleValue(s, SERIES.failClosed, { limit: 'closed-limit' })).toBe(4);
      expect(sampleValue(s, SERIES.decisions, { limit: 'closed-limit', outcome: 'fail-closed' })).toBe(4);
      expect(sampleValue(s, SERIES.decisions, { limit: 'degraded-limit', outcome: 'degraded' })).toBe(4);
      expect(sampleValue(s, SERIES.decisions, { limit: 'open-limit', outcome: 'fail-open' })).toBe(4);
      // Three failed calls were made and timed; the breaker-open one was not made.
      expect(sampleValue(s, SERIES.storeDuration + '_count', { store: 'remote' })).toBe(4);
    }
  });

  it('times store calls into buckets fine enough for a single-digit-millisecond deadline', async () => {
    const registry = new Registry();
    bind(registry);
    const limiter = createLimiter({ limits: [{ ...perIp, limit: 100, store: 'slow' }], stores: { slow: new SwitchableStore(5, 200) } });
    for (let i = 0; i < 3; i++) await limiter.check({ ip: '192.0.2.1' });
    const s = await scrape(registry);
    const buckets = s.filter((x) => x.name === `${SERIES.storeDuration}_bucket` && x.labels.store === 'slow');
    expect(buckets.map((b) => b.labels.le)).toEqual([...STORE_DURATION_BUCKETS.map(String), '+Inf']);
    expect(STORE_DURATION_BUCKETS.filter((b) => b <= 0.01).length).toBeGreaterThanOrEqual(6);
    expect(sampleValue(s, `${SERIES.storeDuration}_count`, { store: 'slow' })).toBe(3);
    expect(sampleValue(s, `${SERIES.storeDuration}_bucket`, { store: 'slow', le: '0.004' })).toBe(0);
    expect(sampleValue(s, `${SERIES.storeDuration}_sum`, { store: 'slow' })).toBeGreaterThanOrEqual(3 * 0.004);
  });

  it('with limiters: every configured limit and store has its series at 0 before any traffic, and the replica count', async () => {
    const registry = new Registry();
    const limiter = createLimiter({ limits: [perIp, { ...shadowUser, store: 'remote' }], stores: { remote: new SwitchableStore() }, replicas: 3 });
    bind(registry, () => [limiter]);
    const s = await scrape(registry);
    for (const limit of ['per-ip', 'user-shadow']) {
      for (const outcome of OUTCOMES) expect(sampleValue(s, SERIES.decisions, { limit, outcome })).toBe(0);
      expect(sampleValue(s, SERIES.fallbackDecisions, { limit })).toBe(0);
      expect(sampleValue(s, SERIES.failClosed, { limit })).toBe(0);
    }
    for (const store of ['(default)', 'remote']) {
      for (const kind of STORE_ERROR_KINDS) expect(sampleValue(s, SERIES.storeErrors, { store, kind })).toBe(0);
      expect(sampleValue(s, SERIES.breakerOpen, { store })).toBe(0);
    }
    expect(sampleValue(s, SERIES.replicas)).toBe(3);

    const bare = new Registry();
    bind(bare);
    expect((await scrape(bare)).filter((x) => !x.name.startsWith(SERIES.storeDuration))).toEqual([]);
  });

  it('never puts a key, or an error message, into a label or anywhere in the output', async () => {
    const store = new SwitchableStore();
    const limits: LimitDefinition[] = [
      { name: 'per-ip', purpose: 'shedding', limit: 1, window: '1m', key: 'ip' },
      { name: 'per-phone', purpose: 'abuse', limit: 1, window: '1m', key: 'body.phone', store: 'remote' },
      { name: 'per-header', purpose: 'shedding', limit: 1, window: '1m', key: 'header.x-tenant', onError: 'degraded', store: 'remote' },
    ];
    const limiter = createLimiter({ limits, stores: { remote: store } });
    const registry = new Registry();
    bind(registry, () => [limiter]);
    const allowed: Record<string, ReadonlySet<string>> = {
      limit: new Set(limits.map((l) => l.name)),
      outcome: new Set(OUTCOMES),
      store: new Set(['(default)', 'remote']),
      kind: new Set(STORE_ERROR_KINDS),
      le: new Set([...STORE_DURATION_BUCKETS.map(String), '+Inf']),
    };
    const hostile = fc.oneof(
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
      fc.constantFrom('"} 1\nratecontract_replicas 999', 'per-ip', 'remote', 'rejected', '\\', '\u0000', '${limit}', '<script>'),
    );
    await fc.assert(
      fc.asyncProperty(hostile, hostile, fc.boolean(), async (key, other, failing) => {
        store.mode = failing ? 'fail' : 'ok';
        const marker = `k3y-${key}-${other}`;
        for (let i = 0; i < 2; i++) await limiter.check({ ip: marker, body: { phone: marker }, headers: { 'x-tenant': other } });
        const text = await registry.metrics();
        expect(text).not.toContain('k3y-');
        expect(text).not.toContain('secret-connection-detail');
        for (const sample of parseExposition(text).samples) {
          for (const [name, value] of Object.entries(sample.labels)) expect(allowed[name]?.has(value), `${name}=${value}`).toBe(true);
        }
      }),
      fcBudget({ runs: 60, ms: 4000 }),
    );
  });

  it('close() stops counting and frees the names for a new binding; a second binding on the same registry is refused and changes nothing', async () => {
    const registry = new Registry();
    const first = prometheusMetrics({ registry });
    const limiter = createLimiter({ limits: [perIp], clock: new ManualClock(T0) });
    await limiter.check({ ip: '192.0.2.1' });
    expect(() => prometheusMetrics({ registry })).toThrow(/already been registered/);
    expect(sampleValue(await scrape(registry), SERIES.decisions, { limit: 'per-ip', outcome: 'allowed' })).toBe(1);
    first.close();
    first.close();
    expect(await registry.metrics()).not.toContain('ratecontract_');
    await limiter.check({ ip: '192.0.2.1' });
    bind(registry);
    await limiter.check({ ip: '192.0.2.1' });
    expect(sampleValue(await scrape(registry), SERIES.decisions, { limit: 'per-ip', outcome: 'rejected' })).toBe(1);
    expect(sampleValue(await scrape(registry), SERIES.decisions, { limit: 'per-ip', outcome: 'allowed' })).toBe(0);
  });

  it('follows limiters() at each scrape (a reload swaps them)', async () => {
    const registry = new Registry();
    let current = [createLimiter({ limits: [perIp] })];
    bind(registry, () => current);
    expect(sampleValue(await scrape(registry), SERIES.replicas)).toBe(1);
    current = [createLimiter({ limits: [{ ...perIp, name: 'per-ip-v2' }], replicas: 4 })];
    const s = await scrape(registry);
    expect(sampleValue(s, SERIES.replicas)).toBe(4);
    expect(sampleValue(s, SERIES.decisions, { limit: 'per-ip-v2', outcome: 'allowed' })).toBe(0);
  });
});
