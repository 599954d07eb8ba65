/**
 * The live shadow report (core/shadow-report.ts): the space-saving sketch's
 * bounds against exact counts (property), a known mix through a limiter
 * (two heavy legitimate principals and a spread of abusive keys), anonymous
 * keys only as keyed hashes, the memory bound measured, and the options
 * refused with their paths.
 */
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ShadowSketch } from '../../../packages/ratecontract/src/core/shadow-report.js';
import { ConfigError, createLimiter, ManualClock, SHADOW_BYTES_PER_COUNTER, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const T0 = 1_700_000_000_000;

describe('the sketch against exact counts', () => {
  const eventArb = fc.record({
    // A few heavy keys and a long tail.
    key: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 2, arbitrary: fc.integer({ min: 4, max: 400 }) }),
    rejected: fc.boolean(),
    dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 2000 })),
  });

  it('holds at most buckets x capacity counters; counts the period\'s checks and rejections exactly; brackets each key\'s true count; tracks every key above total / capacity', () => {
    fc.assert(
      fc.property(
        fc.record({ buckets: fc.integer({ min: 1, max: 6 }), capacity: fc.integer({ min: 10, max: 20 }), periodMs: fc.constantFrom(1000, 6000, 60_000) }),
        fc.array(eventArb, { minLength: 1, maxLength: 600 }),
        ({ buckets, capacity, periodMs }, events) => {
          const sketch = new ShadowSketch('l', 'ip', periodMs, buckets, capacity, T0, (k) => k);
          const width = Math.floor(periodMs / buckets);
          const seen: Array<{ t: number; key: string; rejected: boolean }> = [];
          let now = T0;
          for (const e of events) {
            now += e.dt;
            sketch.observe(`k${e.key}`, e.rejected, now);
            seen.push({ t: now, key: `k${e.key}`, rejected: e.rejected });
            if (sketch.counters > buckets * capacity) expect(sketch.counters).toBeLessThanOrEqual(buckets * capacity);
          }
          const from = Math.floor(now / width) * width - (buckets - 1) * width;
          const live = seen.filter((s) => s.t >= from);
          const truth = new Map<string, number>();
          let rejects = 0;
          for (const s of live) {
            if (!s.rejected) continue;
            rejects++;
            truth.set(s.key, (truth.get(s.key) ?? 0) + 1);
          }
          const report = sketch.report(now);
          expect(report.checks).toBe(live.length);
          expect(report.wouldReject).toBe(rejects);
          expect(report.top10Share).toBeLessThanOrEqual(1);
          expect(report.top.length).toBeLessThanOrEqual(10);
          const candidates = sketch.candidates(now);
          for (const [key, c] of candidates) {
            const t = truth.get(key) ?? 0;
            expect(c.count - c.err, key).toBeLessThanOrEqual(t);
            expect(t, key).toBeLessThanOrEqual(c.count + c.unseen);
          }
          for (const [key, t] of truth) if (t > rejects / capacity) expect(candidates.has(key), `${key}: ${t} of ${rejects}`).toBe(true);
          for (const k of report.top) expect(k.atLeast).toBeLessThanOrEqual(truth.get(k.key) ?? 0);
        },
      ),
      fcBudget(),
    );
  });
});

const heavy = ['acme-nightly-batch', 'globex-etl'];

function knownMix(key: 'principal' | 'ip'): ReturnType<ReturnType<typeof createLimiter>['shadowReport']>[number] {
  // A start on a bucket boundary (buckets of 2 min are aligned to the epoch), so the ten minutes are the whole period.
  const clock = new ManualClock(1_700_000_040_000);
  const limits: LimitDefinition[] = [{ name: 'tenant', purpose: 'shedding', algorithm: 'fixed-window', limit: 20, window: '1m', key, shadow: true }];
  const limiter = createLimiter({ clock, limits, shadowReport: { periodMs: 600_000, buckets: 5, capacity: 32 } });
  // Ten minutes: the two batch jobs send 200 a minute each (180 over); 300 abusers 25 a minute each (5 over).
  for (let minute = 0; minute < 10; minute++) {
    for (let i = 0; i < 200; i++) {
      for (const h of heavy) limiter.checkSync(key === 'principal' ? { principal: h } : { ip: h === heavy[0] ? '198.51.100.7' : '198.51.100.8' });
    }
    for (let a = 0; a < 300; a++) {
      for (let i = 0; i < 25; i++) limiter.checkSync(key === 'principal' ? { principal: `bot-${a}` } : { ip: `10.0.${a >> 8}.${a & 255}` });
    }
    clock.advance(60_000);
  }
  clock.advance(-1);
  const [report] = limiter.shadowReport();
  if (report === undefined) throw new Error('no report');
  return report;
}

describe('a known mix: two heavy legitimate keys and a spread of abusive ones', () => {
  it('principals by name: the two batch jobs head the list, with the rate and the top-10 share a promotion decision needs', () => {
    const r = knownMix('principal');
    expect(r.top.slice(0, 2).map((k) => k.key).sort()).toEqual([...heavy].sort());
    expect(r.top.slice(0, 2).every((k) => k.kind === 'principal')).toBe(true);
    // Exact figures: 10 x (2 x 200 + 300 x 25) checks; 10 x (2 x 180 + 300 x 5) would-be rejections.
    expect(r.checks).toBe(10 * (2 * 200 + 300 * 25));
    expect(r.wouldReject).toBe(10 * (2 * 180 + 300 * 5));
    expect(r.wouldRejectRate).toBeCloseTo((2 * 180 + 300 * 5) / (2 * 200 + 300 * 25), 10);
    // The two batch jobs are 3,600 of 18,600; eight abusers add at most their own 50 plus the sketch's overcount.
    for (const k of r.top.slice(0, 2)) {
      expect(k.atLeast).toBeLessThanOrEqual(1800);
      expect(k.wouldReject).toBeGreaterThanOrEqual(1800);
    }
    expect(r.top10Share).toBeGreaterThan(3600 / 18_600);
    expect(r.top10Share).toBeLessThan(0.5);
    expect(r.inShadowMs).toBe(600_000 - 1);
    expect(r.periodMs).toBeLessThanOrEqual(600_000);
    expect(r.sketch).toEqual({ counters: r.sketch.counters, maxCounters: 5 * 32, maxBytes: 5 * 32 * SHADOW_BYTES_PER_COUNTER });
    expect(r.sketch.counters).toBeLessThanOrEqual(160);
  });

  it('anonymous keys by keyed hash only: no IP address anywhere in the report, and the heavy two still lead', () => {
    const r = knownMix('ip');
    const text = JSON.stringify(r);
    expect(text).not.toMatch(/198\.51\.100|10\.0\.\d/);
    for (const k of r.top) {
      expect(k.kind).toBe('hash');
      expect(k.key).toMatch(/^#[A-Za-z0-9_-]{22}$/);
    }
    const [a, b] = r.top;
    expect(a?.wouldReject).toBeGreaterThanOrEqual(1800);
    expect(b?.wouldReject).toBeGreaterThanOrEqual(1800);
  });
});

describe('shadowReport options', () => {
  const limits: LimitDefinition[] = [{ name: 'l', purpose: 'shedding', limit: 1, window: '1m', key: 'ip', shadow: true }];
  it.each([
    [{ periodMs: 10 }, 'shadowReport.periodMs: must be an integer from 1000'],
    [{ buckets: 0 }, 'shadowReport.buckets: must be an integer from 1 to 60'],
    [{ capacity: 5 }, 'shadowReport.capacity: must be an integer from 10 to 10000'],
    [{ secret: 'short' }, 'shadowReport.secret: must be a string of at least 16 characters'],
    [{ bukets: 3 }, 'shadowReport.bukets: unknown option "bukets"; did you mean "buckets"?'],
    ['yes', 'shadowReport: must be an object'],
  ])('%j is refused', (shadowReport, message) => {
    expect(() => createLimiter({ limits, shadowReport: shadowReport as never })).toThrow(ConfigError);
    expect(() => createLimiter({ limits, shadowReport: shadowReport as never })).toThrow(message);
  });

  it('false: no report; no shadowed limit: no report', async () => {
    const off = createLimiter({ limits, shadowReport: false });
    await off.check({ ip: 'a' });
    expect(off.shadowReport()).toEqual([]);
    expect(createLimiter({ limits: [{ ...limits[0], shadow: false } as LimitDefinition] }).shadowReport()).toEqual([]);
  });

  it('a set secret gives the same hash in two limiters (replicas can be compared); the default does not', async () => {
    const a = createLimiter({ limits, shadowReport: { secret: 'shared-secret-0123' } });
    const b = createLimiter({ limits, shadowReport: { secret: 'shared-secret-0123' } });
    const c = createLimiter({ limits });
    for (const l of [a, b, c]) for (let i = 0; i < 3; i++) await l.check({ ip: '203.0.113.9' });
    const key = (l: typeof a) => l.shadowReport()[0]?.top[0]?.key;
    expect(key(a)).toBe(key(b));
    expect(key(c)).not.toBe(key(a));
  });
});

describe('memory', () => {
  it(`a full sketch takes at most SHADOW_BYTES_PER_COUNTER (${SHADOW_BYTES_PER_COUNTER}) bytes a counter, labels of 64 characters`, () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const sketches: ShadowSketch[] = [];
    gc();
    const before = process.memoryUsage().heapUsed;
    const n = 40;
    for (let s = 0; s < n; s++) {
      const sketch = new ShadowSketch(`l${s}`, 'principal', 600_000, 6, 64, T0, (k) => k);
      for (let b = 0; b < 6; b++) {
        // Churn: 4 x 64 distinct keys a bucket, so the sketch evicts (a Map keeps deleted slots until it rehashes).
        for (let i = 0; i < 256; i++) sketch.observe(`${'p'.repeat(56)}-${String(s * 10_000 + b * 1000 + i).padStart(7, '0')}`, true, T0 + b * 100_000);
      }
      expect(sketch.counters).toBe(6 * 64);
      sketches.push(sketch);
    }
    gc();
    const perCounter = (process.memoryUsage().heapUsed - before) / (n * 6 * 64);
    expect(sketches.length).toBe(n);
    expect(perCounter).toBeLessThanOrEqual(SHADOW_BYTES_PER_COUNTER);
    expect(perCounter).toBeGreaterThan(64);
  });
});
