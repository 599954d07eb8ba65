import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { figures } from '../../../packages/ratecontract/src/algorithms/types.js';
import { decideSubWindows, type SubWindowState } from '../../../packages/ratecontract/src/algorithms/sub-windows.js';
import { slidingWindow, type AlgorithmParams, type SlidingWindowState } from '../../../packages/ratecontract/src/index.js';
import { advance, deepFreeze, drive, fcBudget, quotaParamsArb, stepsArb, type Decided, type Traffic } from '../../helpers/fc-budget.js';
import { expectEqual } from '../../helpers/cheap-expect.js';

/** The precisions the properties draw from: small ones and the published ones. */
const PRECISIONS = [2, 3, 4, 5, 10];

/** Small parameters with a precision k >= 2: a window of k x g ms, g from 1 ms up. */
const paramsArb: fc.Arbitrary<AlgorithmParams> = fc
  .record({
    limit: fc.integer({ min: 1, max: 8 }),
    precision: fc.constantFrom(...PRECISIONS),
    g: fc.oneof(fc.integer({ min: 1, max: 6 }), fc.constantFrom(7, 100, 6_000)),
  })
  .map(({ limit, precision, g }) => ({ limit, windowMs: precision * g, burst: limit, queue: false, precision }));

function trafficArb(params: fc.Arbitrary<AlgorithmParams>, maxLength = 60): fc.Arbitrary<Traffic> {
  return params.chain((p) =>
    fc.record({
      p: fc.constant(p),
      start: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 ** 40 }), fc.constant(1_700_000_000_000)),
      steps: stepsArb(p, p.limit, maxLength),
      keepNormalised: fc.boolean(),
    }),
  );
}

interface Admission {
  readonly t: number;
  readonly cost: number;
}

function admitted(decided: readonly Decided<unknown>[]): Admission[] {
  return decided.filter((d) => d.result.allowed && d.cost > 0).map((d) => ({ t: d.now, cost: d.cost }));
}

function sumIn(adm: readonly Admission[], from: number, to: number): number {
  let s = 0;
  for (const a of adm) if (a.t >= from && a.t <= to) s += a.cost;
  return s;
}

const big = BigInt;

/** The rule recomputed from the admission history, in BigInt: old x (g - e) + (rest + cost) x g <= N x g. */
function fitsByHistory(seen: readonly Admission[], now: number, cost: number, p: AlgorithmParams): boolean {
  const k = p.precision ?? 1;
  const g = p.windowMs / k;
  const w = Math.floor(now / g) * g;
  const old = sumIn(seen, w - k * g, w - (k - 1) * g - 1);
  const rest = sumIn(seen, w - (k - 1) * g, now);
  return big(old) * big(g - (now - w)) + big(rest + cost) * big(g) <= big(p.limit) * big(g);
}

describe('sliding-window with precision k: bounds', () => {
  it('at most N in any k consecutive sub-windows and in any W - W/k + 1 ms, at most 2N - 1 in any W, within bound(p, t), and exactly its rule', () => {
    let rejected = 0;
    fc.assert(
      fc.property(trafficArb(paramsArb), (traffic) => {
        const { p } = traffic;
        const k = p.precision ?? 1;
        const W = p.windowMs;
        const g = W / k;
        const N = p.limit;
        const decided = drive(slidingWindow, traffic);
        const adm = admitted(decided);
        for (const a of adm) {
          const sub = Math.floor(a.t / g) * g;
          expect(sumIn(adm, sub, sub + W - 1), `k sub-windows from ${sub}`).toBeLessThanOrEqual(N);
          expect(sumIn(adm, a.t, a.t + W - g), `${W - g + 1} ms from ${a.t}`).toBeLessThanOrEqual(N);
          expect(sumIn(adm, a.t, a.t + W - 1), `W from ${a.t}`).toBeLessThanOrEqual(2 * N - 1);
        }
        for (let i = 0; i < adm.length; i++) {
          for (let j = i; j < adm.length; j++) {
            const first = (adm[i] as Admission).t;
            const last = (adm[j] as Admission).t;
            const sum = sumIn(adm, first, last);
            if (sum > slidingWindow.bound(p, last - first + 1)) expect(sum, `[${first}, ${last}]`).toBeLessThanOrEqual(slidingWindow.bound(p, last - first + 1));
          }
        }
        const seen: Admission[] = [];
        for (const d of decided) {
          expect(d.result.allowed, `at ${d.now}, cost ${d.cost}`).toBe(fitsByHistory(seen, d.now, d.cost, p));
          if (!d.result.allowed) rejected++;
          if (d.result.allowed && d.cost > 0) seen.push({ t: d.now, cost: d.cost });
        }
      }),
      fcBudget(),
    );
    expect(rejected).toBeGreaterThan(50);
  });

  it('bound(p, t) is never above the coarser precisions\' and equals N at W - W/k + 1 ms and 2N - 1 at W', () => {
    for (const k of PRECISIONS) {
      const p = { limit: 10, windowMs: 60 * k, burst: 10, queue: false, precision: k };
      expect(slidingWindow.bound(p, p.windowMs - p.windowMs / k + 1)).toBe(10);
      expect(slidingWindow.bound(p, p.windowMs)).toBe(19);
      for (const t of [1, 59, 60, 61, 600, 6_000, 86_400_000]) {
        expect(slidingWindow.bound(p, t)).toBeLessThanOrEqual(slidingWindow.bound({ ...p, precision: 1 }, t));
      }
    }
  });

  it('attains 2N - 1 in a W-long interval (N at the end of a sub-window, N - 1 late in the one a window later), so the W bound is tight', () => {
    const p = { limit: 3, windowMs: 24, burst: 3, queue: false, precision: 4 };
    let state: unknown;
    const adm: Admission[] = [];
    for (let t = 5; t <= 29; t++) {
      for (let i = 0; i < p.limit; i++) {
        const r = slidingWindow.decide(state as SlidingWindowState, t, 1, p);
        if (r.allowed) {
          state = r.state;
          adm.push({ t, cost: 1 });
        }
      }
    }
    expect(sumIn(adm, 5, 5)).toBe(3);
    expect(sumIn(adm, 5, 5 + p.windowMs - 1)).toBe(2 * p.limit - 1);
  });

  it('at quota magnitudes (limits to 10^12, windows to 2^35 ms) the rule holds exactly, in BigInt', () => {
    let rejected = 0;
    const quota = quotaParamsArb({ burst: false }).chain((base) =>
      fc.constantFrom(...PRECISIONS).map((k) => ({ ...base, windowMs: base.windowMs - (base.windowMs % k), precision: k })),
    );
    fc.assert(
      fc.property(trafficArb(quota, 30), (traffic) => {
        const { p } = traffic;
        const decided = drive(slidingWindow, traffic);
        const seen: Admission[] = [];
        for (const d of decided) {
          expect(d.result.allowed, `at ${d.now}, cost ${d.cost}`).toBe(fitsByHistory(seen, d.now, d.cost, p));
          if (!d.result.allowed) rejected++;
          if (d.result.allowed && d.cost > 0) seen.push({ t: d.now, cost: d.cost });
        }
      }),
      fcBudget(),
    );
    expect(rejected).toBeGreaterThan(20);
  });
});

describe('sliding-window with precision k: Retry-After, decideInto, state life', () => {
  it('after every rejection: admitted at now + retryAfterMs and not 1 ms earlier; Infinity iff cost > N', () => {
    let finite = 0;
    fc.assert(
      fc.property(trafficArb(paramsArb), (traffic) => {
        const { p } = traffic;
        for (const d of drive(slidingWindow, traffic)) {
          const r = d.result;
          if (r.allowed) continue;
          if (d.cost > p.limit) {
            expect(r.retryAfterMs).toBe(Infinity);
            continue;
          }
          finite++;
          expect(Number.isSafeInteger(r.retryAfterMs) && r.retryAfterMs >= 1, String(r.retryAfterMs)).toBe(true);
          for (const s of [d.before, r.state]) {
            expect(slidingWindow.decide(s, d.now + r.retryAfterMs, d.cost, p).allowed).toBe(true);
            expect(slidingWindow.decide(s, d.now + r.retryAfterMs - 1, d.cost, p).allowed).toBe(false);
          }
        }
      }),
      fcBudget({ runs: 300 }),
    );
    expect(finite).toBeGreaterThan(50);
  });

  it('decideInto is decide, and writes an admitted state into `into` (the memory store\'s in-place step)', () => {
    fc.assert(
      fc.property(trafficArb(paramsArb), (traffic) => {
        const { p, steps } = traffic;
        const out = figures();
        let now = traffic.start;
        let pure: unknown;
        let stored: unknown;
        let lastRetry = 0;
        for (const step of steps) {
          now = advance(now, step, p.windowMs, lastRetry);
          const r = slidingWindow.decide(deepFreeze(structuredClone(pure)) as SlidingWindowState, now, step.cost, p);
          const into = step.cost > 0 ? stored : undefined;
          const next = slidingWindow.decideInto(stored as SlidingWindowState, now, step.cost, p, out, into as SlidingWindowState);
          expectEqual([out.allowed, out.remaining, out.resetMs, out.retryAfterMs, out.delayMs], [r.allowed, r.remaining, r.resetMs, r.retryAfterMs, r.delayMs]);
          expectEqual(next, r.state);
          if (r.allowed && step.cost > 0) {
            if (into !== undefined && next !== undefined) expect(next).toBe(into);
            pure = r.state;
            stored = next;
          }
          lastRetry = r.retryAfterMs;
        }
      }),
      fcBudget(),
    );
  });

  it('resetMs is when the state is gone: from expiresAt on it decides as no state at all', () => {
    fc.assert(
      fc.property(trafficArb(paramsArb), fc.integer({ min: 0, max: 50 }), (traffic, later) => {
        const { p } = traffic;
        for (const d of drive(slidingWindow, traffic)) {
          const s = d.result.state;
          if (s === undefined) {
            expect(d.result.resetMs).toBe(0);
            continue;
          }
          const end = slidingWindow.expiresAt(s, p);
          expect(d.result.resetMs).toBe(end - d.now);
          for (const cost of [0, 1, p.limit]) {
            const a = slidingWindow.decide(s, end + later, cost, p);
            const b = slidingWindow.decide(undefined, end + later, cost, p);
            expectEqual([a.allowed, a.remaining, a.resetMs, a.retryAfterMs], [b.allowed, b.remaining, b.resetMs, b.retryAfterMs]);
          }
        }
      }),
      fcBudget(),
    );
  });

  it('the sub-window rule with k = 1 is the two-counter rule (same figures on the same traffic)', () => {
    const one = fc
      .record({ limit: fc.integer({ min: 1, max: 8 }), windowMs: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constantFrom(60, 1000)) })
      .map(({ limit, windowMs }) => ({ limit, windowMs, burst: limit, queue: false }));
    fc.assert(
      fc.property(trafficArb(one), (traffic) => {
        const { p } = traffic;
        let sub: SubWindowState | undefined;
        const out = figures();
        let now = traffic.start;
        let two: SlidingWindowState | undefined;
        let lastRetry = 0;
        for (const step of traffic.steps) {
          now = advance(now, step, p.windowMs, lastRetry);
          const r = slidingWindow.decide(two, now, step.cost, p);
          const next = decideSubWindows(sub, now, step.cost, p, 1, out, undefined);
          expectEqual([out.allowed, out.remaining, out.resetMs, out.retryAfterMs], [r.allowed, r.remaining, r.resetMs, r.retryAfterMs]);
          if (r.allowed && step.cost > 0) {
            two = r.state as SlidingWindowState | undefined;
            sub = next;
            const t = two;
            expectEqual(sub === undefined ? undefined : { w: sub.w, c: sub.n[0], p: sub.n[1] }, t === undefined ? undefined : { w: t.w, c: t.c, p: t.p });
          }
          lastRetry = r.retryAfterMs;
        }
      }),
      fcBudget(),
    );
  });
});
