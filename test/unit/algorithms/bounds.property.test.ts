import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingLog,
  slidingWindow,
  tokenBucket,
  type Algorithm,
  type AlgorithmParams,
} from '../../../packages/ratecontract/src/index.js';
import { drive, fcBudget, largeParamsArb, paramsArb, quotaParamsArb, trafficArb, type Decided } from '../../helpers/fc-budget.js';

interface Admission {
  readonly t: number;
  readonly cost: number;
}

function admitted<S>(decided: readonly Decided<S>[]): Admission[] {
  return decided.filter((d) => d.result.allowed && d.cost > 0).map((d) => ({ t: d.now, cost: d.cost }));
}

/** Calls `check(first, last, sum)` for every interval [first, last] whose ends are admission instants (the intervals where the maxima lie). */
function forEveryInterval(adm: readonly Admission[], check: (first: number, last: number, sum: number) => void): void {
  const times: number[] = [];
  const prefix: number[] = [0];
  for (const a of adm) {
    if (times.length > 0 && times[times.length - 1] === a.t) prefix[prefix.length - 1] = (prefix[prefix.length - 1] ?? 0) + a.cost;
    else {
      times.push(a.t);
      prefix.push((prefix[prefix.length - 1] ?? 0) + a.cost);
    }
  }
  for (let i = 0; i < times.length; i++) {
    for (let j = i; j < times.length; j++) {
      check(times[i] ?? 0, times[j] ?? 0, (prefix[j + 1] ?? 0) - (prefix[i] ?? 0));
    }
  }
}

/** Admitted cost in [from, to]. */
function sumIn(adm: readonly Admission[], from: number, to: number): number {
  let s = 0;
  for (const a of adm) if (a.t >= from && a.t <= to) s += a.cost;
  return s;
}

function perAlignedWindow(adm: readonly Admission[], W: number): Map<number, number> {
  const m = new Map<number, number>();
  for (const a of adm) {
    const w = Math.floor(a.t / W) * W;
    m.set(w, (m.get(w) ?? 0) + a.cost);
  }
  return m;
}

/**
 * `expect(actual, message).toBeLessThanOrEqual(bound)`, built only when the
 * comparison fails (`actual > bound`, or a NaN), where it fails as before
 * with the same report. The checks over every interval run about a million
 * times per property, and building an expectation each time was most of
 * this file's time.
 */
function atMost(actual: number, bound: number, message?: () => string): void {
  if (!(actual <= bound)) expect(actual, message?.()).toBeLessThanOrEqual(bound);
}

/** `expect(holds, message).toBe(true)`, built only when it does not hold (see `atMost`). */
function holds(condition: boolean, message?: () => string): void {
  if (!condition) expect(condition, message?.()).toBe(true);
}

function expectWithinBound<S>(algo: Algorithm<S>, p: AlgorithmParams, adm: readonly Admission[]): void {
  forEveryInterval(adm, (first, last, sum) => {
    atMost(sum, algo.bound(p, last - first + 1), () => `${algo.name}: [${first}, ${last}]`);
  });
}

describe('fixed-window', () => {
  it('admits at most N per aligned window and within bound(p, t) in every interval, and exactly the requests its counter allows', () => {
    fc.assert(
      fc.property(trafficArb(fixedWindow, paramsArb({ burst: false })), (traffic) => {
        const { p } = traffic;
        const decided = drive(fixedWindow, traffic);
        const adm = admitted(decided);
        for (const c of perAlignedWindow(adm, p.windowMs).values()) expect(c).toBeLessThanOrEqual(p.limit);
        expectWithinBound(fixedWindow, p, adm);
        // Not merely safe but exact: admitted iff the aligned window's count plus cost fits.
        const seen: Admission[] = [];
        for (const d of decided) {
          const w = Math.floor(d.now / p.windowMs) * p.windowMs;
          const used = sumIn(seen, w, d.now);
          expect(d.result.allowed).toBe(used + d.cost <= p.limit);
          if (d.result.allowed) expect(d.result.remaining).toBe(p.limit - used - d.cost);
          if (d.result.allowed && d.cost > 0) seen.push({ t: d.now, cost: d.cost });
        }
      }),
      fcBudget(),
    );
  });

  it('admits the 2N boundary burst: N at W-1 and N at W, all of them', () => {
    const p = { limit: 100, windowMs: 60_000, burst: 100, queue: false };
    for (const start of [0, 1_700_000_040_000]) {
      // start is a multiple of W, so start + W is a window boundary.
      expect(start % p.windowMs).toBe(0);
      let state = fixedWindow.decide(undefined, start, 0, p).state;
      let admittedCount = 0;
      for (const t of [start + p.windowMs - 1, start + p.windowMs]) {
        for (let i = 0; i < p.limit; i++) {
          const r = fixedWindow.decide(state, t, 1, p);
          expect(r.allowed).toBe(true);
          state = r.state;
          admittedCount++;
        }
        // The N+1st request in the same millisecond is rejected until the next boundary.
        const extra = fixedWindow.decide(state, t, 1, p);
        expect(extra.allowed).toBe(false);
        expect(extra.retryAfterMs).toBe(Math.floor(t / p.windowMs) * p.windowMs + p.windowMs - t);
      }
      // 2N inside two consecutive milliseconds: the bound is attained.
      expect(admittedCount).toBe(2 * p.limit);
      expect(fixedWindow.bound(p, 2)).toBe(2 * p.limit);
    }
  });

  it('the same boundary burst gets only N through sliding-log, sliding-window, token-bucket and gcra', () => {
    const p = { limit: 100, windowMs: 60_000, burst: 100, queue: false };
    for (const algo of [slidingLog, slidingWindow, tokenBucket, gcra] as Algorithm<unknown>[]) {
      let state: unknown;
      let n = 0;
      for (const t of [p.windowMs - 1, p.windowMs]) {
        for (let i = 0; i < p.limit; i++) {
          const r = algo.decide(state, t, 1, p);
          if (r.allowed) {
            state = r.state;
            n++;
          }
        }
      }
      // token-bucket / gcra refill N/W per ms: 100/60000 of a token in 1 ms, not a whole one.
      expect(n, algo.name).toBe(p.limit);
    }
  });
});

describe('sliding-log', () => {
  it('admits at most N in every (T-W, T], within bound(p, t), and exactly what the log allows', () => {
    fc.assert(
      fc.property(trafficArb(slidingLog, paramsArb({ burst: false })), (traffic) => {
        const { p } = traffic;
        const decided = drive(slidingLog, traffic);
        const adm = admitted(decided);
        for (const a of adm) expect(sumIn(adm, a.t - p.windowMs + 1, a.t)).toBeLessThanOrEqual(p.limit);
        expectWithinBound(slidingLog, p, adm);
        const seen: Admission[] = [];
        for (const d of decided) {
          const used = sumIn(seen, d.now - p.windowMs + 1, d.now);
          expect(d.result.allowed).toBe(used + d.cost <= p.limit);
          if (d.result.allowed && d.cost > 0) seen.push({ t: d.now, cost: d.cost });
        }
      }),
      fcBudget(),
    );
  });

  it('attains bound(p, t) = N*ceil(t/W) with N at the start of each W', () => {
    const p = { limit: 5, windowMs: 10, burst: 5, queue: false };
    let state: ReturnType<typeof slidingLog.decide>['state'];
    const adm: Admission[] = [];
    for (let t = 1000; t < 1000 + 3 * p.windowMs; t++) {
      const r = slidingLog.decide(state, t, p.limit, p);
      if (r.allowed) {
        state = r.state;
        adm.push({ t, cost: p.limit });
      }
    }
    expect(adm.map((a) => a.t)).toEqual([1000, 1010, 1020]);
    // 21 ms from the first to the last admission: ceil(21/10) = 3 windows' worth.
    expect(sumIn(adm, 1000, 1020)).toBe(slidingLog.bound(p, 21));
    expect(slidingLog.bound(p, 20)).toBe(2 * p.limit);
  });
});

describe('sliding-window', () => {
  it('admits at most N per aligned window, at most 2N-1 in any W, within bound(p, t), and exactly by its comparison rule', () => {
    fc.assert(
      fc.property(trafficArb(slidingWindow, paramsArb({ burst: false })), (traffic) => {
        const { p } = traffic;
        const W = p.windowMs;
        const N = p.limit;
        const decided = drive(slidingWindow, traffic);
        const adm = admitted(decided);
        for (const c of perAlignedWindow(adm, W).values()) expect(c).toBeLessThanOrEqual(N);
        for (const a of adm) expect(sumIn(adm, a.t, a.t + W - 1)).toBeLessThanOrEqual(2 * N - 1);
        expectWithinBound(slidingWindow, p, adm);
        // The rule, recomputed from the admission history rather than the state:
        // prev*(W-elapsed)/W + curr + cost <= N.
        const seen: Admission[] = [];
        for (const d of decided) {
          const w = Math.floor(d.now / W) * W;
          const curr = sumIn(seen, w, d.now);
          const prev = sumIn(seen, w - W, w - 1);
          const fits = prev * (W - (d.now - w)) + (curr + d.cost) * W <= N * W;
          expect(d.result.allowed).toBe(fits);
          if (d.result.allowed && d.cost > 0) seen.push({ t: d.now, cost: d.cost });
        }
      }),
      fcBudget(),
    );
  });

  it('attains 2N-1 in a W-long interval when W >= 2N (so the bound cannot be tightened)', () => {
    const p = { limit: 3, windowMs: 6, burst: 3, queue: false };
    let state: ReturnType<typeof slidingWindow.decide>['state'];
    const adm: Admission[] = [];
    // Greedy: try 3 at every ms; the estimate lets N through at the end of window 0 and N-1 late in window 1.
    for (let t = 5; t <= 10; t++) {
      for (let i = 0; i < p.limit; i++) {
        const r = slidingWindow.decide(state, t, 1, p);
        if (r.allowed) {
          state = r.state;
          adm.push({ t, cost: 1 });
        }
      }
    }
    expect(sumIn(adm, 5, 5)).toBe(3);
    expect(sumIn(adm, 5, 10)).toBe(2 * p.limit - 1);
  });
});

const buckets: ReadonlyArray<readonly [string, Algorithm<unknown>, boolean]> = [
  ['token-bucket', tokenBucket, false],
  ['gcra', gcra, false],
  ['leaky-bucket (meter)', leakyBucket, false],
  ['leaky-bucket (queue)', leakyBucket, true],
];

describe.each(buckets)('%s', (_label, algo, queue) => {
  function expectEnvelope(p: AlgorithmParams, adm: readonly Admission[]): void {
    forEveryInterval(adm, (first, last, sum) => {
      const t = last - first + 1;
      atMost(sum, algo.bound(p, t));
      // Textbook envelope B + r*t with r = N/W, compared exactly in integers.
      atMost(sum * p.windowMs, p.burst * p.windowMs + p.limit * t);
      // ... and the sharper form: only last - first ms of refill lie between the two instants.
      atMost(sum * p.windowMs, p.burst * p.windowMs + p.limit * (last - first));
    });
  }

  it('admits at most B + N*t/W in every interval of length t (small parameters)', () => {
    fc.assert(
      fc.property(trafficArb(algo, paramsArb({ burst: true, queue })), (traffic) => {
        expectEnvelope(traffic.p, admitted(drive(algo, traffic)));
      }),
      fcBudget(),
    );
  });

  it('admits at most B + N*t/W with limit*window and burst*window up to 2^49', () => {
    fc.assert(
      fc.property(trafficArb(algo, largeParamsArb({ burst: true, queue })), (traffic) => {
        expectEnvelope(traffic.p, admitted(drive(algo, traffic)));
      }),
      fcBudget({ runs: 100 }),
    );
  });

  it('bound(p, t) is attained by a greedy client (B at once, then one per refill) and is never above the textbook B + r*t', () => {
    // Attained whenever one ms of refill plus a leftover fraction never overflows the
    // bucket: N <= (B-1)*W. (With more refill per ms than that, or B = 1 and W/N not a
    // whole number of ms, the cap clips refill and bound() is conservative.)
    const arb = fc
      .record({
        limit: fc.integer({ min: 1, max: 8 }),
        windowMs: fc.integer({ min: 1, max: 300 }),
        burst: fc.integer({ min: 2, max: 8 }),
        start: fc.constantFrom(0, 1_700_000_000_000),
        t: fc.integer({ min: 1, max: 900 }),
      })
      .filter(({ limit, windowMs, burst }) => limit <= (burst - 1) * windowMs);
    fc.assert(
      fc.property(arb, ({ limit, windowMs, burst, start, t }) => {
        const p = { limit, windowMs, burst, queue };
        let state: unknown;
        let n = 0;
        for (let now = start; now < start + t; now++) {
          // At most B + N per ms can be admitted (a broken algorithm must fail, not hang).
          for (let k = 0; k <= burst + limit; k++) {
            const r = algo.decide(state, now, 1, p);
            if (!r.allowed) break;
            state = r.state;
            n++;
          }
        }
        expect(n).toBe(algo.bound(p, t));
        expect(algo.bound(p, t) * windowMs).toBeLessThanOrEqual(burst * windowMs + limit * t);
      }),
      fcBudget({ runs: 100 }),
    );
  });

  it('does not drift over a long horizon when W/N is not a whole number of ms', () => {
    // T = 1000/3 ms. One request per ms for 10^6 ms admits exactly B + floor((10^6 - 1) * 3 / 1000):
    // every third of a token is kept, none is rounded away.
    const p = { limit: 3, windowMs: 1000, burst: 2, queue };
    const start = 1_700_000_000_123;
    let state: unknown;
    let n = 0;
    for (let now = start; now < start + 1_000_000; now++) {
      const r = algo.decide(state, now, 1, p);
      if (r.allowed) {
        state = r.state;
        n++;
      }
    }
    expect(n).toBe(2 + 2999);
    expect(n).toBe(algo.bound(p, 1_000_000));
  });
});

// ---------------------------------------------------------------------------
// Quota magnitudes: limits up to 10^12 (and 2^40), windows up to 366 days,
// max(N, B) * W beyond 2^49. Products such as N * W pass 2^53 here, so the
// reference figures are computed in BigInt.
// ---------------------------------------------------------------------------

const big = BigInt;

describe('at quota magnitudes (beyond 2^49, compared in BigInt)', () => {
  it('fixed-window: at most N per aligned window, within bound(p, t), exactly what its counter allows', () => {
    fc.assert(
      fc.property(trafficArb(fixedWindow, quotaParamsArb({ burst: false })), (traffic) => {
        const { p } = traffic;
        const decided = drive(fixedWindow, traffic);
        const adm = admitted(decided);
        for (const c of perAlignedWindow(adm, p.windowMs).values()) expect(c).toBeLessThanOrEqual(p.limit);
        expectWithinBound(fixedWindow, p, adm);
        const seen: Admission[] = [];
        for (const d of decided) {
          const w = Math.floor(d.now / p.windowMs) * p.windowMs;
          const used = sumIn(seen, w, d.now);
          expect(d.result.allowed).toBe(used + d.cost <= p.limit);
          if (d.result.allowed) expect(d.result.remaining).toBe(p.limit - used - d.cost);
          if (d.result.allowed && d.cost > 0) seen.push({ t: d.now, cost: d.cost });
        }
      }),
      fcBudget(),
    );
  });

  it('sliding-log (within its 100,000-entry budget): at most N in every (T-W, T], exactly what the log allows', () => {
    fc.assert(
      fc.property(trafficArb(slidingLog, quotaParamsArb({ burst: false, log: true })), (traffic) => {
        const { p } = traffic;
        const decided = drive(slidingLog, traffic);
        const adm = admitted(decided);
        for (const a of adm) expect(sumIn(adm, a.t - p.windowMs + 1, a.t)).toBeLessThanOrEqual(p.limit);
        expectWithinBound(slidingLog, p, adm);
        const seen: Admission[] = [];
        for (const d of decided) {
          const used = sumIn(seen, d.now - p.windowMs + 1, d.now);
          expect(d.result.allowed).toBe(used + d.cost <= p.limit);
          if (d.result.allowed && d.cost > 0) seen.push({ t: d.now, cost: d.cost });
        }
      }),
      fcBudget(),
    );
  });

  it('sliding-window: at most N per aligned window, within bound(p, t), and exactly its comparison rule, evaluated in BigInt', () => {
    let rejected = 0;
    fc.assert(
      fc.property(trafficArb(slidingWindow, quotaParamsArb({ burst: false })), (traffic) => {
        const { p } = traffic;
        const W = p.windowMs;
        const N = p.limit;
        const decided = drive(slidingWindow, traffic);
        const adm = admitted(decided);
        for (const c of perAlignedWindow(adm, W).values()) expect(c).toBeLessThanOrEqual(N);
        for (const a of adm) expect(sumIn(adm, a.t, a.t + W - 1)).toBeLessThanOrEqual(2 * N - 1);
        expectWithinBound(slidingWindow, p, adm);
        const seen: Admission[] = [];
        for (const d of decided) {
          const w = Math.floor(d.now / W) * W;
          const curr = sumIn(seen, w, d.now);
          const prev = sumIn(seen, w - W, w - 1);
          // prev*(W - elapsed) + (curr + cost)*W <= N*W, in exact integers.
          const fits = big(prev) * big(W - (d.now - w)) + big(curr + d.cost) * big(W) <= big(N) * big(W);
          expect(d.result.allowed, `at ${d.now}: prev ${prev}, curr ${curr}, cost ${d.cost}`).toBe(fits);
          if (d.result.allowed) {
            // remaining = floor((N*W - prev*(W - elapsed) - (curr + cost)*W) / W), exactly.
            const left = (big(N) * big(W) - big(prev) * big(W - (d.now - w)) - big(curr + d.cost) * big(W)) / big(W);
            expect(big(d.result.remaining)).toBe(left);
          } else rejected++;
          if (d.result.allowed && d.cost > 0) seen.push({ t: d.now, cost: d.cost });
        }
      }),
      fcBudget(),
    );
    expect(rejected).toBeGreaterThan(50);
  });

  describe.each(buckets)('%s', (_label, algo, queue) => {
    it('admits at most B + N*t/W in every interval (BigInt), and at most bound(p, t), which is never above it', () => {
      let admittedCost = 0;
      fc.assert(
        fc.property(trafficArb(algo, quotaParamsArb({ burst: true, queue })), (traffic) => {
          const { p } = traffic;
          const adm = admitted(drive(algo, traffic));
          forEveryInterval(adm, (first, last, sum) => {
            const t = last - first + 1;
            atMost(sum, algo.bound(p, t));
            // Textbook envelope, sharper form: only last - first ms of refill lie between the two instants.
            holds(big(sum) * big(p.windowMs) <= big(p.burst) * big(p.windowMs) + big(p.limit) * big(last - first), () => `[${first}, ${last}]: ${sum}`);
            holds(big(algo.bound(p, t)) * big(p.windowMs) <= big(p.burst) * big(p.windowMs) + big(p.limit) * big(t - 1));
          });
          for (const a of adm) admittedCost += a.cost;
        }),
        fcBudget(),
      );
      expect(admittedCost).toBeGreaterThan(0);
    });
  });
});
