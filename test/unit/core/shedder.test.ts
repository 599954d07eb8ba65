/**
 * The criticality shedder on a fake clock with an injected driver: under
 * overload it sheds sheddable traffic first, then default, never critical
 * (which keeps its reserve of the in-flight cap); once the overload ends it
 * recovers, and its level moves in few direction changes (no flapping).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, createShedder, ManualClock, type Criticality, type ShedDriver, type ShedStep } from '../../../packages/ratecontract/src/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

/** A driver whose reading the test sets. */
function manualDriver(): ShedDriver & { value: number } {
  const d = { name: 'manual', value: 0, read: () => d.value };
  return d;
}

/** Direction changes in a sequence of steps (ignoring holds). */
function directionChanges(steps: readonly ShedStep[]): number {
  let last = 0;
  let changes = 0;
  for (const s of steps) {
    if (s.direction === 0) continue;
    if (last !== 0 && s.direction !== last) changes++;
    last = s.direction;
  }
  return changes;
}

describe('createShedder', () => {
  it('sheds sheddable before default and never critical; recovers once the overload ends', () => {
    const clock = new ManualClock(0);
    const driver = manualDriver();
    const steps: ShedStep[] = [];
    const shedder = createShedder({ driver, target: 100, clock, interval: 100, onStep: (s) => steps.push(s) });
    const counts = (): Record<Criticality, number> => {
      const admitted = { critical: 0, default: 0, sheddable: 0 };
      for (let i = 0; i < 100; i++) {
        for (const c of ['critical', 'default', 'sheddable'] as const) {
          const a = shedder.admit(c);
          if (a.admitted) {
            admitted[c]++;
            a.ticket.done();
          }
        }
      }
      return admitted;
    };
    expect(counts()).toEqual({ critical: 100, default: 100, sheddable: 100 });
    // Overload: the reading stays at twice the target.
    driver.value = 200;
    const during: Array<Record<Criticality, number>> = [];
    for (let step = 0; step < 30; step++) {
      clock.advance(100);
      during.push(counts());
    }
    // Sheddable goes to nothing before default loses anything; critical is never touched.
    for (const c of during) {
      expect(c.critical).toBe(100);
      if (c.default < 100) expect(c.sheddable).toBe(0);
    }
    expect(during[during.length - 1]).toEqual({ critical: 100, default: 0, sheddable: 0 });
    // Overload over: recovers additively, default first, in one direction only.
    driver.value = 10;
    const recovering = steps.length;
    for (let step = 0; step < 60; step++) {
      clock.advance(100);
      counts();
    }
    expect(counts()).toEqual({ critical: 100, default: 100, sheddable: 100 });
    expect(directionChanges(steps.slice(recovering))).toBe(0);
    expect(directionChanges(steps)).toBe(1);
    // A shed answer says when to come back.
    driver.value = 1000;
    for (let i = 0; i < 30; i++) {
      clock.advance(100);
      shedder.admit('sheddable');
    }
    const shed = shedder.admit('sheddable');
    expect(shed).toEqual({ admitted: false, retryAfterMs: 1000 });
  });

  it('holds still inside the hysteresis band, however noisy the reading', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 80.5, max: 100, noNaN: true }), { minLength: 10, maxLength: 200 }), (readings) => {
        const clock = new ManualClock(0);
        const driver = manualDriver();
        const steps: ShedStep[] = [];
        const shedder = createShedder({ driver, target: 100, clock, interval: 50, onStep: (s) => steps.push(s) });
        shedder.admit('default');
        for (const r of readings) {
          driver.value = r;
          clock.advance(50);
          shedder.admit('default');
        }
        expect(steps.length).toBe(readings.length);
        expect(steps.every((s) => s.direction === 0 && s.level === 2)).toBe(true);
      }),
      fcBudget({ runs: 200, ms: 2000 }),
    );
  });

  it('a noisy overload that ends: the level turns once (down, then only up), whatever the noise', () => {
    // Readings: noisy overload (120-200), then noisy normal load (0-70). AIMD steps down, then only up.
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 120, max: 200, noNaN: true }), { minLength: 5, maxLength: 40 }),
        fc.array(fc.double({ min: 0, max: 70, noNaN: true }), { minLength: 5, maxLength: 80 }),
        (over, normal) => {
          const clock = new ManualClock(0);
          const driver = manualDriver();
          const steps: ShedStep[] = [];
          const shedder = createShedder({ driver, target: 100, clock, interval: 50, onStep: (s) => steps.push(s) });
          shedder.admit('default');
          for (const r of [...over, ...normal]) {
            driver.value = r;
            clock.advance(50);
            shedder.admit('default');
          }
          expect(directionChanges(steps)).toBeLessThanOrEqual(1);
          expect(steps[over.length - 1]?.level).toBeLessThan(2);
        },
      ),
      fcBudget({ runs: 200, ms: 2000 }),
    );
  });

  it('the in-flight cap keeps criticalReserve of it for critical requests', () => {
    const shedder = createShedder({ target: 10, maxInFlight: 10, criticalReserve: 0.3, clock: new ManualClock(0) });
    const held = [];
    for (let i = 0; i < 20; i++) {
      const a = shedder.admit('default');
      if (a.admitted) held.push(a.ticket);
    }
    expect(held.length).toBe(7);
    let critical = 0;
    for (let i = 0; i < 20; i++) {
      const a = shedder.admit('critical');
      if (a.admitted) {
        critical++;
        held.push(a.ticket);
      }
    }
    expect(critical).toBe(3);
    expect(shedder.stats().inFlight).toBe(10);
    // done() is idempotent: a ticket ends once.
    held[0]?.done();
    held[0]?.done();
    expect(shedder.stats().inFlight).toBe(9);
    expect(shedder.admit('sheddable').admitted).toBe(false);
    expect(shedder.admit('critical').admitted).toBe(true);
  });

  it('refuses bad options, naming them', () => {
    expect(() => createShedder({ target: 0 })).toThrow(ConfigError);
    expect(() => createShedder({ target: 0 })).toThrow(/shedder\.target: must be a positive number/);
    expect(() => createShedder({ target: 1, decrease: 1 })).toThrow(/shedder\.decrease/);
    expect(() => createShedder({ target: 1, lowWater: 0 })).toThrow(/shedder\.lowWater/);
    expect(() => createShedder({ target: 1, criticalReserve: 2 })).toThrow(/shedder\.criticalReserve/);
    expect(() => createShedder({ target: 1, driver: 'cpu' as 'in-flight' })).toThrow(/shedder\.driver/);
    expect(() => createShedder({ target: 1, maxInFlight: 0 })).toThrow(/shedder\.maxInFlight/);
    expect(() => createShedder({ target: 1, targt: 2 } as never)).toThrow(/shedder\.targt: unknown option/);
  });
});
