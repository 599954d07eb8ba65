import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ceiling, spreadWidth } from '../../../packages/ratecontract/src/client/backoff.js';
import { backoffWait, createFetch, serverWait, type Backoff, type Jitter } from '../../../packages/ratecontract/src/client/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';
import { asctime, imf, rfc850, Virtual } from './helpers.js';

const jitterArb = fc.constantFrom<Jitter>('full', 'equal', 'decorrelated', 'none');
const backoffArb: fc.Arbitrary<Backoff> = fc
  .record({ base: fc.integer({ min: 1, max: 10_000 }), extra: fc.integer({ min: 0, max: 100_000 }), jitter: jitterArb })
  .map(({ base, extra, jitter }) => ({ base, cap: base + extra, jitter }));
/** [0, 1): the ends included on purpose. */
const unitArb = fc.oneof(fc.constant(0), fc.constant(1 - Number.EPSILON), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }));

describe('backoff bounds', () => {
  it('full jitter is within [0, min(cap, base * 2^n)]; none is the ceiling; equal is in its upper half', () => {
    let atCap = 0;
    fc.assert(
      fc.property(backoffArb, fc.integer({ min: 0, max: 1100 }), unitArb, (b, n, u) => {
        const c = Math.min(b.cap, b.base * 2 ** n);
        expect(ceiling(b, n)).toBe(c);
        const full = backoffWait({ ...b, jitter: 'full' }, n, b.base, () => u);
        expect(full).toBeGreaterThanOrEqual(0);
        expect(full).toBeLessThanOrEqual(c);
        const equal = backoffWait({ ...b, jitter: 'equal' }, n, b.base, () => u);
        expect(equal).toBeGreaterThanOrEqual(Math.floor(c / 2));
        expect(equal).toBeLessThanOrEqual(c);
        expect(backoffWait({ ...b, jitter: 'none' }, n, b.base, () => u)).toBe(Math.floor(c));
        if (c === b.cap) atCap += 1;
      }),
      fcBudget({ runs: 500 }),
    );
    // The generator reaches the cap (large n), so the cap branch is exercised.
    expect(atCap).toBeGreaterThan(0);
  });

  it('decorrelated jitter is within [base, min(cap, 3 * previous)] and never above the cap', () => {
    fc.assert(
      fc.property(backoffArb, fc.integer({ min: 0, max: 200_000 }), unitArb, (b, previous, u) => {
        const w = backoffWait({ ...b, jitter: 'decorrelated' }, 0, previous, () => u);
        expect(w).toBeGreaterThanOrEqual(Math.min(b.base, b.cap));
        expect(w).toBeLessThanOrEqual(Math.min(b.cap, Math.max(b.base, 3 * previous)));
      }),
      fcBudget({ runs: 500 }),
    );
  });

  it('a server-given wait is a floor: jitter only adds, by less than the spread width', () => {
    fc.assert(
      fc.property(backoffArb, fc.integer({ min: 0, max: 86_400_000 }), unitArb, (b, server, u) => {
        const w = serverWait(b, server, () => u);
        expect(w).toBeGreaterThanOrEqual(server);
        expect(w - server).toBeLessThanOrEqual(Math.max(0, spreadWidth(b, server)));
        if (b.jitter === 'none') expect(w).toBe(server);
      }),
      fcBudget({ runs: 500 }),
    );
  });
});

describe('the wait the client takes', () => {
  it('property: never below the Retry-After the server sent, in any form, with any jitter and random source', async () => {
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 50_000 }),
        fc.constantFrom('seconds', 'imf', 'rfc850', 'asctime'),
        fc.integer({ min: -86_400_000, max: 86_400_000 }),
        jitterArb,
        unitArb,
        async (seconds, form, skew, jitter, u) => {
          const t = new Virtual();
          const served = Math.floor((t.now + skew) / 1000) * 1000; // the server clock, skewed, whole seconds
          const at = served + seconds * 1000;
          const value = form === 'seconds' ? String(seconds) : form === 'imf' ? imf(at) : form === 'rfc850' ? rfc850(at) : asctime(at);
          let n = 0;
          const politeFetch = createFetch({
            // A fetch-compatible function: the property needs many cases, and the HTTP path is covered by fetch.test.ts.
            fetch: () => Promise.resolve(n++ === 0 ? new Response('', { status: 429, headers: { 'retry-after': value, date: imf(served) } }) : new Response('ok')),
            backoff: { jitter },
            random: () => u,
            sleep: t.sleep,
            clock: t.clock,
            maxRetryAfter: Infinity,
            maxWait: Infinity,
            budget: false,
          });
          const res = await politeFetch('http://127.0.0.1:1/x');
          expect(res.status).toBe(200);
          expect(t.waits).toHaveLength(1);
          expect(t.waits[0]).toBeGreaterThanOrEqual(seconds * 1000);
          checked += 1;
        },
      ),
      fcBudget({ runs: 300 }),
    );
    expect(checked).toBeGreaterThan(20);
  });
});
