/**
 * Two-tier allotments that end on keys never checked again: the sweep gives
 * them back (bounded work per tick), close() resolves once every unspent
 * allotment is back, and a check that decided on an allotment that ended while the
 * check waited for the store still answers. Driven with a manual clock and
 * the sweep called directly (the timer only calls the same method).
 */
import { describe, expect, it } from 'vitest';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { TierStore, SWEEP_KEYS_PER_TICK } from '../../../packages/ratecontract/src/core/tier-store.js';
import { ManualClock, memoryStore, type CompiledLimit, type LimitDefinition, type Store, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';

function compiled(defs: LimitDefinition[]): CompiledLimit[] {
  return defs.map((d, i) => compileLimit(d, `limits[${i}]`, new Set()));
}

const ALLOTTED: LimitDefinition = { name: 'tenant', purpose: 'shedding', algorithm: 'fixed-window', limit: 1000, window: 60_000, tier: { mode: 'allotment', maxAllotment: 10, allotmentLifetime: 1000 } };
const PLAIN: LimitDefinition = { name: 'ip', purpose: 'shedding', algorithm: 'fixed-window', limit: 1000, window: 60_000 };

/** A store over a memory store whose calls can be held until released, and whose refunds are counted. */
function gated(clock: ManualClock): Store & { hold: boolean; release_(): void; refunds: number; refunded: number } {
  void clock;
  const inner = memoryStore();
  let waiting: Array<() => void> = [];
  const s = {
    kind: 'memory',
    hold: false,
    refunds: 0,
    refunded: 0,
    release_() {
      const w = waiting;
      waiting = [];
      for (const f of w) f();
    },
    async evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
      if (s.hold) await new Promise<void>((resolve) => waiting.push(resolve));
      return inner.evaluate(ops, now);
    },
    async refund(ops: readonly StoreOp[], now: number): Promise<void> {
      if (s.hold) await new Promise<void>((resolve) => waiting.push(resolve));
      s.refunds++;
      for (const op of ops) s.refunded += op.cost;
      return inner.refund(ops, now);
    },
    release(op: StoreOp, now: number) {
      return inner.release(op, now);
    },
    peek(ops: readonly StoreOp[], now: number) {
      return inner.peek(ops, now);
    },
  };
  return s;
}

const op = (limit: CompiledLimit, key: string, cost = 1): StoreOp => ({ spec: limit, key, cost, leaseId: undefined });

/** What the shared store counts for `key` (remaining of a cost-0 peek). */
async function sharedRemaining(store: Store, limit: CompiledLimit, key: string, now: number): Promise<number> {
  if (store.peek === undefined) throw new Error('the store cannot peek');
  return ((await store.peek([op(limit, key, 0)], now))[0] as StoreOpResult).remaining;
}

/** Two checks of `key`: the first is exact, the second draws an allotment of maxAllotment (10), 9 of it unspent. */
async function takeAllotment(tier: TierStore, limit: CompiledLimit, key: string, now: number): Promise<void> {
  for (let i = 0; i < 2; i++) expect((await tier.evaluate([op(limit, key)], now))[0]?.allowed).toBe(true);
}

describe('two-tier allotment sweep', () => {
  it('gives back an allotment that ended on a key never checked again, without an eviction or another check', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const shared = gated(clock);
    const [limit] = compiled([ALLOTTED]) as [CompiledLimit];
    const tier = new TierStore(shared, [limit], clock, 1, () => 1);
    try {
      await takeAllotment(tier, limit, 'quiet', clock.now());
      expect(await sharedRemaining(shared, limit, 'quiet', clock.now())).toBe(1000 - 11);
      // Still live: the sweep leaves it.
      clock.advance(999);
      expect(tier.sweep()).toBe(0);
      clock.advance(1);
      expect(tier.sweep()).toBe(1);
      await tier.close();
      expect(shared.refunded).toBe(9);
      expect(await sharedRemaining(shared, limit, 'quiet', clock.now())).toBe(1000 - 2);
    } finally {
      await tier.close();
    }
  });

  it(`looks at no more than ${SWEEP_KEYS_PER_TICK} keys a tick and resumes where it stopped: 1,000 quiet keys go back over 4 ticks`, async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const shared = gated(clock);
    const [limit] = compiled([{ ...ALLOTTED, tier: { mode: 'allotment', maxAllotment: 10, allotmentLifetime: 1000, maxKeys: 5000 } }]) as [CompiledLimit];
    const tier = new TierStore(shared, [limit], clock, 1, () => 1);
    try {
      for (let i = 0; i < 1000; i++) await takeAllotment(tier, limit, `k${i}`, clock.now());
      clock.advance(1000);
      const ticks: number[] = [];
      for (let t = 0; t < 5; t++) ticks.push(tier.sweep());
      expect(ticks).toEqual([SWEEP_KEYS_PER_TICK, SWEEP_KEYS_PER_TICK, SWEEP_KEYS_PER_TICK, 1000 - 3 * SWEEP_KEYS_PER_TICK, 0]);
      await tier.close();
      expect(shared.refunded).toBe(9 * 1000);
    } finally {
      await tier.close();
    }
  });

  it('close() resolves only once the unspent allotments are back in the shared store, and a second close() is harmless', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const shared = gated(clock);
    const [limit] = compiled([ALLOTTED]) as [CompiledLimit];
    const tier = new TierStore(shared, [limit], clock, 1, () => 1);
    await takeAllotment(tier, limit, 'a', clock.now());
    await takeAllotment(tier, limit, 'b', clock.now());
    shared.hold = true;
    let closed = false;
    const closing = tier.close().then(() => (closed = true));
    const again = tier.close();
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    expect(shared.refunded).toBe(0);
    shared.release_();
    await Promise.all([closing, again]);
    expect(closed).toBe(true);
    expect(shared.refunded).toBe(18);
    expect(await sharedRemaining(shared, limit, 'a', clock.now())).toBe(1000 - 2);
    await tier.close();
    expect(shared.refunds).toBe(2);
  });

  it('a check that spent from an allotment which ended while the check waited for the store still answers (the sweep gave the allotment back meanwhile)', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const shared = gated(clock);
    const [allotted, plain] = compiled([ALLOTTED, PLAIN]) as [CompiledLimit, CompiledLimit];
    const tier = new TierStore(shared, [allotted, plain], clock, 1, () => 1);
    try {
      await takeAllotment(tier, allotted, 't', clock.now());
      // A chain of the allotted limit (decided on the allotment) and a plain one (needs the store): it waits.
      shared.hold = true;
      const waiting = tier.evaluate([op(allotted, 't'), op(plain, 'ip')], clock.now());
      await new Promise((r) => setImmediate(r));
      // Meanwhile the allotment ends, and the sweep gives it back.
      clock.advance(1000);
      expect(tier.sweep()).toBe(1);
      shared.hold = false;
      shared.release_();
      const results = await waiting;
      expect(results.map((r) => r.allowed)).toEqual([true, true]);
    } finally {
      shared.hold = false;
      shared.release_();
      await tier.close();
    }
  });
});
