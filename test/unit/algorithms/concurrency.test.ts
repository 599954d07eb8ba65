import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { concurrency, createLimiter, ManualClock, releaseLease, type ConcurrencyState } from '../../../packages/ratecontract/src/index.js';
import { deepFreeze, fcBudget } from '../../helpers/fc-budget.js';

type Op =
  | { readonly kind: 'acquire'; readonly dt: number; readonly cost: number }
  | { readonly kind: 'release'; readonly pick: number }
  | { readonly kind: 'advance'; readonly dt: number };

const opArb = (limit: number, windowMs: number): fc.Arbitrary<Op> =>
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('acquire' as const),
        dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: windowMs })),
        cost: fc.oneof({ weight: 3, arbitrary: fc.constant(1) }, { weight: 2, arbitrary: fc.integer({ min: 0, max: limit + 1 }) }),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('advance' as const), dt: fc.integer({ min: 0, max: 2 * windowMs }) }) },
  );

const scenarioArb = fc
  .record({ limit: fc.integer({ min: 1, max: 6 }), windowMs: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.constant(30_000)), start: fc.constantFrom(0, 1_700_000_000_000) })
  .chain(({ limit, windowMs, start }) =>
    fc.record({
      p: fc.constant({ limit, windowMs, burst: limit, queue: false }),
      start: fc.constant(start),
      ops: fc.array(opArb(limit, windowMs), { minLength: 1, maxLength: 80, size: 'max' }),
    }),
  );

describe('concurrency', () => {
  it('never has more than N in flight, with random releases and expiries, and admits exactly what fits', () => {
    const seen = { rejected: 0, released: 0, expired: 0 };
    fc.assert(
      fc.property(scenarioArb, ({ p, start, ops }) => {
        const N = p.limit;
        let now = start;
        let state: ConcurrencyState | undefined;
        // The model: every lease the algorithm granted and nobody released.
        const held = new Map<string, { exp: number; cost: number }>();
        const inFlight = (): number => {
          let n = 0;
          for (const l of held.values()) if (l.exp > now) n += l.cost;
          return n;
        };
        let next = 0;
        for (const op of ops) {
          if (op.kind === 'advance') {
            const before = inFlight();
            now += op.dt;
            if (inFlight() < before) seen.expired++;
          } else if (op.kind === 'release') {
            const ids = [...held.keys()];
            const id = ids[op.pick % Math.max(1, ids.length)];
            if (id !== undefined) {
              held.delete(id);
              if (state !== undefined) state = releaseLease(deepFreeze(state), id);
              seen.released++;
              // Releasing again is a no-op.
              if (state !== undefined) expect(releaseLease(state, id)).toEqual(state);
            }
          } else {
            now += op.dt;
            const id = `l${next++}`;
            const used = inFlight();
            const r = concurrency.decide(deepFreeze(state), now, op.cost, p, id);
            expect(r.allowed).toBe(used + op.cost <= N);
            expect(r.remaining).toBe(N - used - (r.allowed ? op.cost : 0));
            if (r.allowed && op.cost > 0) {
              state = r.state;
              held.set(id, { exp: now + p.windowMs, cost: op.cost });
            }
            if (!r.allowed) {
              seen.rejected++;
              if (op.cost <= N) {
                // Releasing any held lease can only bring the retry instant closer.
                for (const other of held.keys()) {
                  const after = concurrency.decide(state === undefined ? undefined : releaseLease(state, other), now + r.retryAfterMs, op.cost, p, 'retry');
                  expect(after.allowed).toBe(true);
                }
              }
            }
          }
          // The bound, and the algorithm's view of what is in flight, after every step.
          expect(inFlight()).toBeLessThanOrEqual(N);
          expect(N - concurrency.decide(state, now, 0, p).remaining).toBe(inFlight());
        }
      }),
      fcBudget({ runs: 300 }),
    );
    expect(seen.rejected).toBeGreaterThan(200);
    expect(seen.released).toBeGreaterThan(200);
    expect(seen.expired).toBeGreaterThan(20);
  });

  it('a lease lives exactly W ms: held at t + W - 1, gone at t + W', () => {
    const p = { limit: 1, windowMs: 30_000, burst: 1, queue: false };
    const t = 1_700_000_000_000;
    const held = concurrency.decide(undefined, t, 1, p, 'a');
    expect(held.allowed).toBe(true);
    expect(held.resetMs).toBe(30_000);
    const blocked = concurrency.decide(held.state, t + 29_999, 1, p, 'b');
    expect([blocked.allowed, blocked.retryAfterMs]).toEqual([false, 1]);
    expect(concurrency.decide(held.state, t + 30_000, 1, p, 'b').allowed).toBe(true);
    expect(concurrency.expiresAt(held.state ?? [], p)).toBe(t + 30_000);
  });

  it('retryAfterMs waits for the leases that expire first, even when they were taken later (the window was shortened)', () => {
    const t = 1_700_000_000_000;
    // Taken under a 30 s window, then the limit was redeployed with a 5 s window.
    const state: ConcurrencyState = [
      { id: 'old', exp: t + 30_000, cost: 1 },
      { id: 'new', exp: t + 5_000, cost: 1 },
    ];
    const p = { limit: 2, windowMs: 5_000, burst: 2, queue: false };
    const r = concurrency.decide(state, t, 1, p, 'x');
    expect([r.allowed, r.retryAfterMs]).toEqual([false, 5_000]);
    expect(concurrency.decide(state, t + 4_999, 1, p, 'x').allowed).toBe(false);
    expect(concurrency.decide(state, t + 5_000, 1, p, 'x').allowed).toBe(true);
    // Cost 2 needs both gone.
    expect(concurrency.decide(state, t, 2, p, 'x').retryAfterMs).toBe(30_000);
  });

  it('through createLimiter: decision.release() frees the lease; a crashed holder frees it at expiry', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const limiter = createLimiter({
      clock,
      limits: [{ name: 'inflight', purpose: 'shedding', algorithm: 'concurrency', limit: 2, window: '10s', key: 'global' }],
    });
    const a = await limiter.check({});
    const b = await limiter.check({});
    expect([a.allowed, b.allowed]).toEqual([true, true]);
    const c = await limiter.check({});
    expect([c.allowed, c.retryAfterMs]).toEqual([false, 10_000]);
    await a.release();
    const d = await limiter.check({});
    expect(d.allowed).toBe(true);
    // b and d are never released (their holders "crashed"): both expire 10 s after they were taken.
    clock.advance(9_999);
    expect((await limiter.check({})).allowed).toBe(false);
    clock.advance(1);
    expect((await limiter.check({})).allowed).toBe(true);
  });
});
