import { describe, expect, it } from 'vitest';
import { monotonicNow, nextTurn, unrefTimer } from '../../../packages/ratecontract/src/core/timers.js';

describe('runtime-neutral timers (core/timers.ts)', () => {
  it("unrefs a timer that has unref and leaves workerd's numbers alone", () => {
    let called = 0;
    const timer = { unref: () => void called++ };
    expect(unrefTimer(timer)).toBe(timer);
    expect(called).toBe(1);
    expect(unrefTimer(42)).toBe(42);
    expect(unrefTimer(undefined)).toBeUndefined();
    const real = setTimeout(() => undefined, 1);
    expect(unrefTimer(real).hasRef()).toBe(false);
    clearTimeout(real);
  });

  it('runs a function on the next turn', async () => {
    const order: string[] = [];
    const done = new Promise<void>((resolve) =>
      nextTurn(() => {
        order.push('next turn');
        resolve();
      }),
    );
    order.push('now');
    await done;
    expect(order).toEqual(['now', 'next turn']);
  });

  it('never goes backwards', () => {
    let last = monotonicNow();
    for (let i = 0; i < 10_000; i++) {
      const t = monotonicNow();
      expect(t >= last).toBe(true);
      last = t;
    }
  });
});
