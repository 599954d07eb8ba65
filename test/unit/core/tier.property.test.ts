import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { algorithms } from '../../../packages/ratecontract/src/algorithms/registry.js';
import { createLimiter, ManualClock, memoryStore, type Limiter, type Store, type StoreOp } from '../../../packages/ratecontract/src/index.js';
import type { MemoryStore } from '../../../packages/ratecontract/src/stores/memory/memory-store.js';
import { fcBudget } from '../../helpers/fc-budget.js';

type TierAlgorithm = 'fixed-window' | 'sliding-window' | 'token-bucket' | 'gcra';
const TIER_ALGORITHMS: readonly TierAlgorithm[] = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra'];
const BUCKETS = new Set<string>(['token-bucket', 'gcra']);

/** A store over the shared memory store that counts the calls that reach it (the round trips of a network store). */
function counted(inner: MemoryStore): Store & { calls: number } {
  const s = {
    kind: 'memory',
    calls: 0,
    evaluate(ops: readonly StoreOp[], now: number) {
      s.calls++;
      return inner.evaluate(ops, now);
    },
    refund(ops: readonly StoreOp[], now: number) {
      return inner.refund(ops, now);
    },
    release(op: StoreOp, now: number) {
      return inner.release(op, now);
    },
  };
  return s;
}

/** One check of a simulated fleet: which process, which key, how far the clock moves first, and how many checks start together. */
interface Step {
  readonly process: number;
  readonly key: number;
  readonly dt: number;
  readonly together: number;
  /** Rounds of `together` checks at the same instant (a burst from every process). */
  readonly rounds: number;
}

const stepArb = (k: number, windowMs: number): fc.Arbitrary<Step> =>
  fc.record({
    process: fc.integer({ min: 0, max: k - 1 }),
    key: fc.integer({ min: 0, max: 1 }),
    dt: fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 0, max: Math.max(1, Math.floor(windowMs / 4)) }), fc.integer({ min: 0, max: windowMs * 2 })),
    together: fc.integer({ min: 1, max: 4 }),
    rounds: fc.oneof(fc.constant(1), fc.constant(1), fc.integer({ min: 2, max: 20 })),
  });

interface Case {
  readonly algorithm: TierAlgorithm;
  readonly limit: number;
  readonly windowMs: number;
  readonly burst: number;
  readonly k: number;
  readonly maxAllotment: number;
  readonly lifetimeMs: number;
  readonly steps: readonly Step[];
}

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    algorithm: fc.constantFrom(...TIER_ALGORITHMS),
    limit: fc.integer({ min: 1, max: 30 }),
    windowMs: fc.constantFrom(10, 60, 100, 1000),
    k: fc.integer({ min: 1, max: 4 }),
    allotmentShare: fc.integer({ min: 1, max: 8 }),
    burstExtra: fc.integer({ min: 0, max: 20 }),
    lifetimeShare: fc.integer({ min: 1, max: 10 }),
  })
  .chain((c) => {
    const bucket = BUCKETS.has(c.algorithm);
    const burst = bucket ? c.limit + c.burstExtra : c.limit;
    // Buckets keep burst - k x maxAllotment in the shared bucket, which must hold one request.
    const maxAllotment = bucket ? Math.max(1, Math.min(Math.floor((burst - 1) / c.k), c.allotmentShare)) : Math.max(1, Math.min(c.limit, c.allotmentShare));
    const fits = !bucket || burst - c.k * maxAllotment >= 1;
    return fc.array(stepArb(c.k, c.windowMs), { minLength: 5, maxLength: 120 }).map((steps) => ({
      algorithm: fits ? c.algorithm : 'fixed-window',
      limit: c.limit,
      windowMs: c.windowMs,
      burst: fits ? burst : c.limit,
      k: c.k,
      maxAllotment: fits ? maxAllotment : Math.min(c.limit, maxAllotment),
      lifetimeMs: Math.max(1, Math.floor((c.windowMs * c.lifetimeShare) / 10)),
      steps,
    }));
  });

function fleet(c: Case, tier: Record<string, unknown>, clock: ManualClock, shared: Store): Limiter[] {
  return Array.from({ length: c.k }, () =>
    createLimiter({
      clock,
      defaultStore: shared,
      replicas: c.k,
      limits: [
        {
          name: 'l',
          purpose: 'abuse',
          algorithm: c.algorithm,
          limit: c.limit,
          window: c.windowMs,
          ...(BUCKETS.has(c.algorithm) ? { burst: c.burst } : {}),
          key: 'principal',
          tier: tier as never,
        },
      ],
    }),
  );
}

/** Admissions per key stay within the algorithm's own bound: in every interval, and per aligned window for the windows. */
function assertWithinBound(c: Case, admitted: ReadonlyMap<number, number[]>): void {
  const algo = algorithms[c.algorithm];
  const p = { limit: c.limit, windowMs: c.windowMs, burst: c.burst, queue: false };
  for (const times of admitted.values()) {
    times.sort((a, b) => a - b);
    for (let i = 0; i < times.length; i++) {
      for (let j = i; j < times.length; j++) {
        const t = (times[j] as number) - (times[i] as number) + 1;
        expect(j - i + 1, `${j - i + 1} admitted within ${t} ms`).toBeLessThanOrEqual(algo.bound(p, t));
      }
    }
    if (!BUCKETS.has(c.algorithm)) {
      const perWindow = new Map<number, number>();
      for (const t of times) perWindow.set(Math.floor(t / c.windowMs), (perWindow.get(Math.floor(t / c.windowMs)) ?? 0) + 1);
      for (const n of perWindow.values()) expect(n).toBeLessThanOrEqual(c.limit);
    }
  }
}

describe('two-tier: allotment mode never over-admits (simulated processes on one shared store)', () => {
  it('fleet admissions per key stay within the algorithm bound, whatever the interleaving', async () => {
    let rejections = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const clock = new ManualClock(1_700_000_000_000);
        const shared = memoryStore();
        const limiters = fleet(c, { mode: 'allotment', maxAllotment: c.maxAllotment, allotmentLifetime: c.lifetimeMs }, clock, shared);
        const admitted = new Map<number, number[]>();
        for (const s of c.steps) {
          clock.advance(s.dt);
          const now = clock.now();
          const decisions = [];
          for (let round = 0; round < s.rounds; round++) {
            decisions.push(
              ...(await Promise.all(Array.from({ length: s.together }, (_, j) => (limiters[(s.process + j) % c.k] as Limiter).check({ principal: `k${s.key}` })))),
            );
          }
          for (const d of decisions) {
            if (d.allowed) {
              const list = admitted.get(s.key) ?? [];
              list.push(now);
              admitted.set(s.key, list);
            } else {
              rejections++;
              expect(d.retryAfterMs).toBeGreaterThan(0);
            }
          }
        }
        assertWithinBound(c, admitted);
      }),
      fcBudget({ runs: 150, ms: 6000 }),
    );
    expect(rejections).toBeGreaterThan(50);
  });

  it('fixed-window: a saturated fleet admits at least N - k x maxAllotment per window, and round trips drop by the allotment size', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 20, max: 200 }), fc.integer({ min: 1, max: 10 }), async (k, limit, maxAllotment) => {
        const clock = new ManualClock(1_700_000_000_000);
        const inner = memoryStore();
        const shared = counted(inner);
        const c: Case = { algorithm: 'fixed-window', limit, windowMs: 1000, burst: limit, k, maxAllotment, lifetimeMs: 1000, steps: [] };
        const limiters = fleet(c, { mode: 'allotment', maxAllotment, allotmentLifetime: 1000 }, clock, shared);
        clock.set(Math.ceil(clock.now() / 1000) * 1000);
        let admitted = 0;
        let rejectedInARow = 0;
        for (let i = 0; rejectedInARow < k; i++) {
          const d = await (limiters[i % k] as Limiter).check({ principal: 'hot' });
          if (d.allowed) {
            admitted++;
            rejectedInARow = 0;
          } else rejectedInARow++;
        }
        expect(admitted).toBeLessThanOrEqual(limit);
        expect(admitted).toBeGreaterThanOrEqual(limit - k * maxAllotment);
        // Far from the limit, each round trip carries an allotment; near it, the allotments shrink to 1.
        if (maxAllotment >= 4 && limit >= 8 * k * maxAllotment) expect(shared.calls).toBeLessThan(admitted / 2);
      }),
      fcBudget({ runs: 100, ms: 4000 }),
    );
  });

  it('unspent allotments go back to the shared store when the limiter closes', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const shared = memoryStore();
    const c: Case = { algorithm: 'fixed-window', limit: 100, windowMs: 60_000, burst: 100, k: 2, maxAllotment: 10, lifetimeMs: 60_000, steps: [] };
    const [a, b] = fleet(c, { mode: 'allotment', maxAllotment: 10, allotmentLifetime: '60s' }, clock, shared) as [Limiter, Limiter];
    // The first check of a key is an exact shared check; the second draws an allotment of 10 and spends one of it.
    expect((await a.check({ principal: 'x' })).allowed).toBe(true);
    expect((await a.check({ principal: 'x' })).allowed).toBe(true);
    const plain = createLimiter({ clock, defaultStore: shared, limits: [{ name: 'l', purpose: 'abuse', algorithm: 'fixed-window', limit: 100, window: '60s', key: 'principal' }] });
    const remaining = async (): Promise<number> => {
      const d = await plain.check({ principal: 'x' });
      await new Promise((r) => setImmediate(r));
      return d.results[0]?.remaining ?? -1;
    };
    // The shared counter holds 1 + 10, so a plain check sees 100 - 11 - 1 left.
    expect(await remaining()).toBe(88);
    await a.close();
    await new Promise((r) => setImmediate(r));
    // The 9 unspent units are back: 100 - 2 (a's) - 2 (the plain checks) left.
    expect(await remaining()).toBe(96);
    await b.close();
  });
});

/** A clock that moves by `tick` ms on every read (time passes inside a check), remembering the first read after `mark()`. */
class TickingClock extends ManualClock {
  #tick: number;
  #marked = false;
  first = 0;
  constructor(start: number, tick: number) {
    super(start);
    this.#tick = tick;
  }
  mark(): void {
    this.#marked = true;
  }
  override now(): number {
    this.advance(this.#tick);
    const t = super.now();
    if (this.#marked) {
      this.#marked = false;
      this.first = t;
    }
    return t;
  }
}

describe('two-tier: the local pre-filter never rejects what the shared limit would admit', () => {
  it('each local rejection is a shared rejection at the check\'s instant, with a Retry-After no shorter than the shared wait (time still, or moving within checks)', async () => {
    let local = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 7 })), async (c, tick) => {
        const clock = new TickingClock(1_700_000_000_000, tick);
        const inner = memoryStore();
        const shared = counted(inner);
        const limiters = fleet(c, { mode: 'pre-filter' }, clock, shared);
        const limit = (limiters[0] as Limiter).limits[0];
        for (const s of c.steps) {
          clock.advance(s.dt);
          for (let j = 0; j < s.together * s.rounds; j++) {
            const before = shared.calls;
            clock.mark();
            const d = await (limiters[(s.process + j) % c.k] as Limiter).check({ principal: `k${s.key}` });
            if (shared.calls !== before) continue;
            // Decided without a store call: the pre-filter refused it.
            local++;
            expect(d.allowed).toBe(false);
            const op = { spec: limit as NonNullable<typeof limit>, key: `k${s.key}`, cost: 1, leaseId: undefined };
            const truth = inner.evaluateSync([op], clock.first)[0];
            expect(truth?.allowed, 'the shared limit would have admitted it at the check\'s instant').toBe(false);
            expect(d.retryAfterMs).toBeGreaterThanOrEqual(truth?.retryAfterMs ?? Infinity);
          }
        }
      }),
      fcBudget({ runs: 200, ms: 7000 }),
    );
    expect(local).toBeGreaterThan(20);
  });
});
