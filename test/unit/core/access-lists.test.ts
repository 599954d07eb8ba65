import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { CHANNELS, ConfigError, createLimiter, ManualClock, MemoryStore, type LimitDefinition, type Store, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';

/** A store that counts its calls (asynchronous: the general path). */
function countingStore(): Store & { calls: number } {
  const inner = new MemoryStore();
  const s = {
    kind: 'counting',
    calls: 0,
    evaluate: (ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> => {
      s.calls++;
      return Promise.resolve(inner.evaluateSync(ops, now));
    },
    refund: (ops: readonly StoreOp[], now: number) => inner.refund(ops, now),
    release: (op: StoreOp, now: number) => inner.release(op, now),
  };
  return s;
}

const one: LimitDefinition = { name: 'per-ip', purpose: 'abuse', limit: 1, window: '1m' };
const two: LimitDefinition[] = [one, { name: 'per-user', purpose: 'abuse', limit: 1, window: '1m', key: 'principal' }];

describe('allow and deny lists', () => {
  it('a deny list answers 403 denied with no store call (IPv4 CIDR, IPv6 CIDR, address)', async () => {
    const store = countingStore();
    const limiter = createLimiter({ limits: [one], defaultStore: store, deny: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7'] });
    for (const ip of ['10.1.2.3', '2001:db8:1:2::5', '192.0.2.7', '::ffff:10.9.9.9', '2001:db8:1:2::/64']) {
      const d = await limiter.check({ ip });
      expect(d).toMatchObject({ allowed: false, status: 403, outcome: 'denied', limitName: undefined, retryAfterMs: Infinity });
      expect(d.results[0]).toMatchObject({ source: 'none', listed: 'deny' });
    }
    expect(store.calls).toBe(0);
    expect((await limiter.check({ ip: '192.0.2.8' })).outcome).toBe('allowed');
    expect(store.calls).toBe(1);
  });

  it('the limiter allow list skips the whole chain (allowed-list), with no key function or store call', async () => {
    const store = countingStore();
    let keys = 0;
    const limiter = createLimiter({
      limits: [{ ...one, key: (c) => (keys++, c.ip) }],
      defaultStore: store,
      allow: [{ principal: 'ops' }, (c) => c.ip === 'probe'],
    });
    for (let i = 0; i < 5; i++) expect(await limiter.check({ ip: '1.1.1.1', principal: 'ops' })).toMatchObject({ allowed: true, status: 200, outcome: 'allowed-list' });
    expect((await limiter.check({ ip: 'probe' })).outcome).toBe('allowed-list');
    expect(store.calls + keys).toBe(0);
  });

  it("a limit's allow list skips that limit only; its deny list denies the request, naming the limit", async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      clock,
      limits: [{ ...two[0]!, allow: ['203.0.113.0/24'] }, { ...two[1]!, deny: [{ principal: 'banned' }] }],
    });
    const a = await limiter.check({ ip: '203.0.113.5', principal: 'u1' });
    expect(a.outcome).toBe('allowed');
    expect(a.results.map((r) => r.listed)).toEqual(['allow', undefined]);
    // per-ip skipped, per-user (limit 1) still meters.
    expect((await limiter.check({ ip: '203.0.113.5', principal: 'u1' })).limitName).toBe('per-user');
    expect((await limiter.check({ ip: '203.0.113.5', principal: 'u2' })).allowed).toBe(true);
    expect(await limiter.check({ ip: '203.0.113.5', principal: 'banned' })).toMatchObject({ status: 403, outcome: 'denied', limitName: 'per-user' });
  });

  it('deny wins over allow at any level', async () => {
    const limiter = createLimiter({ limits: [{ ...one, deny: ['10.0.0.1'] }], allow: ['10.0.0.0/8'] });
    expect((await limiter.check({ ip: '10.0.0.1' })).outcome).toBe('denied');
    expect((await limiter.check({ ip: '10.0.0.2' })).outcome).toBe('allowed-list');
  });

  it('lists change at run time without recreating the limiter, on the fast path and checkSync too', async () => {
    const limiter = createLimiter({ limits: [one] });
    expect((await limiter.check({ ip: '198.51.100.1' })).outcome).toBe('allowed');
    limiter.lists.deny.add('198.51.100.0/24');
    expect(limiter.checkSync({ ip: '198.51.100.1' })?.outcome).toBe('denied');
    expect((await limiter.check({ ip: '198.51.100.1' })).status).toBe(403);
    expect(limiter.lists.deny.remove('198.51.100.0/24')).toBe(1);
    expect(limiter.lists.deny.size).toBe(0);
    // Back to metering: the first check consumed the one unit.
    expect((await limiter.check({ ip: '198.51.100.1' })).outcome).toBe('rejected');
    limiter.lists.of('per-ip').allow.add({ principal: 'svc' });
    expect((await limiter.check({ ip: '198.51.100.1', principal: 'svc' })).outcome).toBe('allowed-list');
    limiter.lists.of('per-ip').allow.clear();
    expect((await limiter.check({ ip: '198.51.100.1', principal: 'svc' })).outcome).toBe('rejected');
    expect(() => limiter.lists.of('nope')).toThrow(/no limit named/);
  });

  it('invalid entries are refused at construction and by add, naming the option', () => {
    expect(() => createLimiter({ limits: [one], deny: ['10.0.0.0/33'] })).toThrow(ConfigError);
    expect(() => createLimiter({ limits: [one], allow: ['not-an-ip'] })).toThrow(/allow\[0\]/);
    expect(() => createLimiter({ limits: [{ ...one, deny: [{ principal: '' }] }] })).toThrow(/limits\[0\]\.deny\[0\]/);
    const limiter = createLimiter({ limits: [one] });
    expect(() => limiter.lists.allow.add('1.2.3.4', 'bogus')).toThrow(ConfigError);
    expect(limiter.lists.allow.size).toBe(0);
  });

  it('a throwing function entry is no match, reported on ratecontract:list-error', async () => {
    const seen: unknown[] = [];
    const on = (m: unknown): void => void seen.push(m);
    subscribe(CHANNELS.listError, on);
    try {
      const limiter = createLimiter({
        limits: [one],
        deny: [() => {
          throw new Error('lookup failed');
        }],
      });
      expect((await limiter.check({ ip: '1.2.3.4' })).outcome).toBe('allowed');
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ list: 'deny', limitName: undefined });
    } finally {
      unsubscribe(CHANNELS.listError, on);
    }
  });

  it('the decision event carries the listed outcomes', async () => {
    const outcomes: string[] = [];
    const on = (m: unknown): void => void outcomes.push((m as { decision: { outcome: string } }).decision.outcome);
    subscribe(CHANNELS.decision, on);
    try {
      const limiter = createLimiter({ limits: [one], deny: ['10.0.0.1'], allow: ['10.0.0.2'] });
      await limiter.check({ ip: '10.0.0.1' });
      await limiter.check({ ip: '10.0.0.2' });
    } finally {
      unsubscribe(CHANNELS.decision, on);
    }
    expect(outcomes).toEqual(['denied', 'allowed-list']);
  });
});
