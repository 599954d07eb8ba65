import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { leakyBucket, type AlgorithmParams } from '../../../packages/ratecontract/src/index.js';
import { ALGORITHM_CASES, drive, fcBudget, largeParamsArb, paramsArb, quotaParamsArb, trafficArb, type Traffic } from '../../helpers/fc-budget.js';

const cases = ALGORITHM_CASES;

describe.each(cases)('%s: retryAfterMs is exact', (label, algo, queue) => {
  const seen = { finite: 0, infinite: 0 };

  /** Checks every rejection of a driven workload; returns nothing, throws on the first inexact answer. */
  function checkRejections(traffic: Traffic): void {
    const { p } = traffic;
    const cap = algo.capacity(p);
    for (const d of drive(algo, traffic)) {
      const r = d.result;
      if (r.allowed) {
        expect(r.retryAfterMs).toBe(0);
        continue;
      }
      if (d.cost > cap) {
        expect(r.retryAfterMs).toBe(Infinity);
        seen.infinite++;
        continue;
      }
      // The request fits the capacity, so the wait is finite and at least 1 ms.
      expect(Number.isSafeInteger(r.retryAfterMs), `${label}: ${r.retryAfterMs}`).toBe(true);
      expect(r.retryAfterMs).toBeGreaterThanOrEqual(1);
      seen.finite++;
      // On the state the rejection saw, and on the normalised state it returned (they must agree).
      for (const s of [d.before, r.state]) {
        const at = algo.decide(s, d.now + r.retryAfterMs, d.cost, p, `${d.leaseId}-retry`);
        expect(at.allowed, `${label}: at now + ${r.retryAfterMs}`).toBe(true);
        const early = algo.decide(s, d.now + r.retryAfterMs - 1, d.cost, p, `${d.leaseId}-early`);
        expect(early.allowed, `${label}: at now + ${r.retryAfterMs} - 1`).toBe(false);
      }
    }
  }

  it('after every rejection: admitted at t + retryAfterMs, rejected 1 ms earlier; Infinity iff cost > capacity', () => {
    fc.assert(
      fc.property(trafficArb(algo, paramsArb({ burst: algo.usesBurst, queue })), checkRejections),
      fcBudget({ runs: 300 }),
    );
  });

  it('stays exact with limit*window up to 2^49 and a wall-clock start', () => {
    const before = { ...seen };
    fc.assert(
      fc.property(trafficArb(algo, largeParamsArb({ burst: algo.usesBurst, queue }), 40), checkRejections),
      fcBudget({ runs: 150 }),
    );
    // afterAll counts both properties together: this one must meet rejections of both kinds by itself too.
    expect(seen.finite - before.finite).toBeGreaterThan(20);
    expect(seen.infinite - before.infinite).toBeGreaterThan(5);
  });

  it('stays exact at quota magnitudes: limits up to 10^12 (and 2^40), windows up to 366 days, beyond 2^49', () => {
    const before = { ...seen };
    fc.assert(
      fc.property(trafficArb(algo, quotaParamsArb({ burst: algo.usesBurst, queue, log: algo.name === 'sliding-log' }), 40), checkRejections),
      fcBudget({ runs: 150 }),
    );
    expect(seen.finite - before.finite).toBeGreaterThan(20);
    expect(seen.infinite - before.infinite).toBeGreaterThan(5);
  });

  it('a request above capacity never fits, even on an empty state', () => {
    fc.assert(
      fc.property(paramsArb({ burst: algo.usesBurst, queue }), fc.integer({ min: 1, max: 100 }), fc.integer({ min: 0, max: 2 ** 42 }), (p: AlgorithmParams, extra, now) => {
        const r = algo.decide(undefined, now, algo.capacity(p) + extra, p, 'x');
        expect(r.allowed).toBe(false);
        expect(r.retryAfterMs).toBe(Infinity);
        expect(r.delayMs).toBe(0);
        // Nothing is held, so the full quota is already back (redis-cell's first row says reset 0 too).
        expect([r.state, r.resetMs, r.remaining]).toEqual([undefined, 0, algo.capacity(p)]);
        // ... while exactly the capacity fits on an empty state.
        expect(algo.decide(undefined, now, algo.capacity(p), p, 'y').allowed).toBe(true);
      }),
      fcBudget(),
    );
  });

  afterAll(() => {
    // The properties above must have met real rejections of both kinds, or they proved nothing.
    expect(seen.finite).toBeGreaterThan(200);
    expect(seen.infinite).toBeGreaterThan(20);
  });
});

describe('leaky-bucket queue mode paces admitted requests', () => {
  it('starts (now + delayMs) are in order and at least W/N apart on average: s_j - s_i > (j-i)*W/N - 1, exactly W/N when N divides W', () => {
    const arb = fc
      .record({
        limit: fc.integer({ min: 1, max: 6 }),
        windowMs: fc.oneof(fc.integer({ min: 1, max: 30 }), fc.constantFrom(1000, 60_000)),
        burst: fc.integer({ min: 1, max: 8 }),
        start: fc.constantFrom(0, 1_700_000_000_000),
        gaps: fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 60_000 })), { minLength: 1, maxLength: 80 }),
      })
      .map(({ limit, windowMs, burst, start, gaps }) => ({ p: { limit, windowMs, burst, queue: true }, start, gaps }));
    let pairs = 0;
    fc.assert(
      fc.property(arb, ({ p, start, gaps }) => {
        let state: ReturnType<typeof leakyBucket.decide>['state'];
        let now = start;
        const starts: number[] = [];
        const undelayed: boolean[] = [];
        for (const gap of gaps) {
          now += gap;
          const r = leakyBucket.decide(state, now, 1, p);
          if (!r.allowed) {
            expect(r.delayMs).toBe(0);
            continue;
          }
          state = r.state;
          starts.push(now + r.delayMs);
          undelayed.push(r.delayMs === 0);
        }
        for (let i = 0; i < starts.length; i++) {
          for (let j = i + 1; j < starts.length; j++) {
            const si = starts[i] ?? 0;
            const sj = starts[j] ?? 0;
            expect(sj).toBeGreaterThanOrEqual(si);
            // Rounding each start up to a whole ms costs less than 1 ms against the exact schedule.
            expect((sj - si + 1) * p.limit).toBeGreaterThan((j - i) * p.windowMs);
            if (p.windowMs % p.limit === 0) expect(sj - si).toBeGreaterThanOrEqual(((j - i) * p.windowMs) / p.limit);
            // From a request that found the queue empty (it starts on arrival), the later
            // ones start no earlier than the exact schedule: never ahead of the rate.
            if (undelayed[i] === true) expect((sj - si) * p.limit).toBeGreaterThanOrEqual((j - i) * p.windowMs);
            pairs++;
          }
        }
      }),
      fcBudget(),
    );
    expect(pairs).toBeGreaterThan(100);
  });

  it('works like nginx limit_req burst=2 without nodelay: 1 r/s, queue of 2 behind the one in service', () => {
    const p = { limit: 1, windowMs: 1000, burst: 3, queue: true };
    const t0 = 1_700_000_000_000;
    let state: ReturnType<typeof leakyBucket.decide>['state'];
    const out: Array<[boolean, number, number]> = [];
    for (let i = 0; i < 5; i++) {
      const r = leakyBucket.decide(state, t0, 1, p);
      if (r.allowed) state = r.state;
      out.push([r.allowed, r.delayMs, r.retryAfterMs]);
    }
    expect(out).toEqual([
      [true, 0, 0],
      [true, 1000, 0],
      [true, 2000, 0],
      [false, 0, 1000],
      [false, 0, 1000],
    ]);
    // 1000 ms later one has drained: admitted, and it starts after the two still ahead of it.
    const later = leakyBucket.decide(state, t0 + 1000, 1, p);
    expect([later.allowed, later.delayMs]).toEqual([true, 2000]);
    // A fractional interval (1000/3 ms): starts are rounded up, never early.
    const frac = { limit: 3, windowMs: 1000, burst: 4, queue: true };
    let fs: ReturnType<typeof leakyBucket.decide>['state'];
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = leakyBucket.decide(fs, t0, 1, frac);
      fs = r.state;
      delays.push(r.delayMs);
    }
    expect(delays).toEqual([0, 334, 667, 1000]);
    // The meter makes the same admissions with no delay.
    const meter = leakyBucket.decide(undefined, t0, 3, { ...p, queue: false });
    expect([meter.allowed, meter.delayMs]).toEqual([true, 0]);
  });
});
