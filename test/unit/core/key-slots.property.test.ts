/**
 * `keySlots`: keys that share a slot share one budget. The claim under test:
 * a collision only ever makes a limit stricter, never looser.
 *
 * - With unit costs, for every algorithm: in every prefix of the traffic,
 *   each key gets at most as many admissions with slots as without (the
 *   same traffic, every key on its own state). Concurrency holds each lease
 *   for the same time, and is checked in the same way.
 * - With any costs: each key's admitted cost still obeys the limit's own
 *   bound in every interval (the slot's admissions obey it, and a key's are
 *   a part of them), and the whole slot never exceeds it either.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { algorithms, createLimiter, memoryStore, type AlgorithmName, type Limiter } from '../../../packages/ratecontract/src/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket', 'concurrency'];
const KEYS = 4;

interface Event {
  readonly dt: number;
  readonly who: number;
  readonly cost: number;
}

interface Scenario {
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly windowMs: number;
  readonly burst: number;
  readonly slots: number;
  readonly holdMs: number;
  readonly events: readonly Event[];
}

function scenarioArb(maxCost: number): fc.Arbitrary<Scenario> {
  return fc.record({
    algorithm: fc.constantFrom(...ALGORITHMS),
    limit: fc.integer({ min: 1, max: 6 }),
    windowMs: fc.integer({ min: 10, max: 1000 }),
    burst: fc.integer({ min: 1, max: 6 }),
    slots: fc.integer({ min: 1, max: 3 }),
    holdMs: fc.integer({ min: 1, max: 500 }),
    events: fc.array(
      fc.record({ dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 })), who: fc.integer({ min: 0, max: KEYS - 1 }), cost: fc.integer({ min: 1, max: maxCost }) }),
      { minLength: 1, maxLength: 80 },
    ),
  });
}

function limiterFor(s: Scenario, slots: number | undefined, clock: { now(): number }): Limiter {
  const usesBurst = algorithms[s.algorithm].usesBurst;
  return createLimiter({
    clock,
    defaultStore: memoryStore(),
    limits: [
      {
        name: 'l',
        purpose: 'abuse',
        algorithm: s.algorithm,
        limit: s.limit,
        window: s.windowMs,
        key: 'principal',
        ...(usesBurst && { burst: Math.max(s.burst, 1) }),
        ...(slots !== undefined && { keySlots: slots }),
      },
    ],
  });
}

interface Run {
  /** Per event: whether it was admitted. */
  readonly admitted: boolean[];
}

/** Drives the events through a limiter on a fake clock; concurrency leases are released `holdMs` after admission. */
async function drive(s: Scenario, slots: number | undefined, maxCost: number): Promise<Run> {
  let t = 1_000_000;
  const clock = { now: () => t };
  const limiter = limiterFor(s, slots, clock);
  const held: Array<{ until: number; release: () => Promise<void> }> = [];
  const admitted: boolean[] = [];
  for (const e of s.events) {
    t += e.dt;
    held.sort((a, b) => a.until - b.until);
    while (held.length > 0 && (held[0] as { until: number }).until <= t) await (held.shift() as { release: () => Promise<void> }).release();
    const cost = Math.min(e.cost, maxCost, algorithms[s.algorithm].capacity({ limit: s.limit, windowMs: s.windowMs, burst: algorithms[s.algorithm].usesBurst ? s.burst : s.limit, queue: false }));
    const d = await limiter.check({ principal: `key-${e.who}` }, { cost });
    admitted.push(d.allowed);
    if (d.allowed && s.algorithm === 'concurrency') held.push({ until: t + s.holdMs, release: () => d.release() });
  }
  await limiter.close();
  return { admitted };
}

function costOf(s: Scenario, e: Event, maxCost: number): number {
  const a = algorithms[s.algorithm];
  return Math.min(e.cost, maxCost, a.capacity({ limit: s.limit, windowMs: s.windowMs, burst: a.usesBurst ? s.burst : s.limit, queue: false }));
}

describe('keySlots: a collision only ever makes a limit stricter', () => {
  it('unit costs: in every prefix, every key gets at most as many admissions with slots as without', async () => {
    let collided = 0;
    await fc.assert(
      fc.asyncProperty(scenarioArb(1), async (s) => {
        const own = await drive(s, undefined, 1);
        const shared = await drive(s, s.slots, 1);
        const a = new Array<number>(KEYS).fill(0);
        const b = new Array<number>(KEYS).fill(0);
        s.events.forEach((e, i) => {
          if (own.admitted[i] === true) a[e.who] = (a[e.who] as number) + 1;
          if (shared.admitted[i] === true) b[e.who] = (b[e.who] as number) + 1;
          expect(b[e.who], `key ${e.who} after event ${i}`).toBeLessThanOrEqual(a[e.who] as number);
        });
        if (shared.admitted.some((x, i) => x !== own.admitted[i])) collided++;
      }),
      fcBudget({ runs: 300, ms: 8000 }),
    );
    // The property must have met real collisions (a decision that differs), not only empty slots.
    expect(collided).toBeGreaterThan(10);
  }, 60_000);

  it('any costs: each key, and each slot, stays within the limit\'s bound in every interval', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb(4), async (s0) => {
        // One slot: every key shares it, so the slot's admissions are all admissions.
        const s = { ...s0, slots: 1 };
        if (s.algorithm === 'concurrency') return; // in flight, checked below
        const shared = await drive(s, 1, 4);
        const a = algorithms[s.algorithm];
        const p = { limit: s.limit, windowMs: s.windowMs, burst: a.usesBurst ? s.burst : s.limit, queue: false };
        let t = 1_000_000;
        const adm: Array<{ t: number; cost: number }> = [];
        s.events.forEach((e, i) => {
          t += e.dt;
          if (shared.admitted[i] === true) adm.push({ t, cost: costOf(s, e, 4) });
        });
        for (let i = 0; i < adm.length; i++) {
          let sum = 0;
          for (let j = i; j < adm.length; j++) {
            sum += (adm[j] as { cost: number }).cost;
            const len = (adm[j] as { t: number }).t - (adm[i] as { t: number }).t + 1;
            expect(sum, `${s.algorithm} slot, interval of ${len} ms`).toBeLessThanOrEqual(a.bound(p, len));
          }
        }
      }),
      fcBudget({ runs: 200, ms: 5000 }),
    );
  }, 60_000);

  it('concurrency: the keys of one slot together hold at most N leases, whatever the costs', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb(3), async (s0) => {
        const s = { ...s0, algorithm: 'concurrency' as const, slots: 1 };
        let t = 1_000_000;
        const clock = { now: () => t };
        const limiter = limiterFor(s, 1, clock);
        const held: Array<{ until: number; cost: number; release: () => Promise<void> }> = [];
        for (const e of s.events) {
          t += e.dt;
          held.sort((x, y) => x.until - y.until);
          while (held.length > 0 && (held[0] as { until: number }).until <= t) await (held.shift() as { release: () => Promise<void> }).release();
          const cost = costOf(s, e, 3);
          const d = await limiter.check({ principal: `key-${e.who}` }, { cost });
          // A lease lives until it is released or its window (the lease lifetime) ends, whichever is first.
          if (d.allowed) held.push({ until: t + Math.min(s.holdMs, s.windowMs), cost, release: () => d.release() });
          expect(held.reduce((x, h) => x + h.cost, 0)).toBeLessThanOrEqual(s.limit);
        }
        await limiter.close();
      }),
      fcBudget({ runs: 200, ms: 4000 }),
    );
  }, 60_000);

  it('the same key always lands in the same slot, and slot keys stay within the slot space', async () => {
    let t = 0;
    const limiter = createLimiter({ clock: { now: () => t }, defaultStore: memoryStore(), limits: [{ name: 'l', purpose: 'abuse', limit: 1, window: '1h', key: 'principal', keySlots: 1 }] });
    // One slot: a second key shares the first one's budget.
    expect(limiter.checkSync({ principal: 'victim' })?.allowed).toBe(true);
    expect(limiter.checkSync({ principal: 'someone-else' })?.allowed).toBe(false);
    t += 3_600_000;
    expect(limiter.checkSync({ principal: 'someone-else' })?.allowed).toBe(true);
    await limiter.close();
  });

  it('refuses a keySlots that is not an integer from 1 to 2^32, naming the option', () => {
    for (const bad of [0, -1, 1.5, 2 ** 32 + 1, '65536', Number.NaN]) {
      expect(() => createLimiter({ limits: [{ name: 'l', purpose: 'abuse', limit: 1, window: '1h', keySlots: bad as number }] })).toThrow(/limits\[0\]\.keySlots: must be an integer from 1 to 2\^32/);
    }
    expect(() => createLimiter({ limits: [{ name: 'l', purpose: 'abuse', limit: 1, window: '1h', keySlots: 2 ** 32 }] })).not.toThrow();
  });
});
