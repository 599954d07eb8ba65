import { describe, expect, it } from 'vitest';
import { createSleep, MAX_TIMER_MS, type Timers } from '../../../packages/ratecontract/src/client/sleep.js';

/** Timers the test fires by hand; `handle` makes each handle (an object with unref, or a number as on workerd). */
function manual(handle: (id: number) => unknown): Timers & { scheduled: number[]; cleared: unknown[]; unrefs: number; fire(): void } {
  const pending: Array<{ h: unknown; fn: () => void }> = [];
  const t = {
    scheduled: [] as number[],
    cleared: [] as unknown[],
    unrefs: 0,
    setTimeout(fn: () => void, ms: number): unknown {
      t.scheduled.push(ms);
      const h = handle(t.scheduled.length);
      if (typeof h === 'object' && h !== null) (h as { unref: () => void }).unref = () => (t.unrefs += 1);
      pending.push({ h, fn });
      return h;
    },
    clearTimeout(h: unknown): void {
      t.cleared.push(h);
      const i = pending.findIndex((p) => p.h === h);
      if (i >= 0) pending.splice(i, 1);
    },
    fire(): void {
      pending.shift()?.fn();
    },
  };
  return t;
}

const settled = async (p: Promise<void>): Promise<boolean> => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise<void>((resolve) => setImmediate(resolve));
  return done;
};

describe('the client timer', () => {
  it('by default the wait keeps the process alive: its timer is never unref()d', async () => {
    const timers = manual((id) => ({ id }));
    const p = createSleep({ unref: false, timers })(500, undefined);
    expect(timers.scheduled).toEqual([500]);
    expect(timers.unrefs).toBe(0);
    expect(await settled(p)).toBe(false);
    timers.fire();
    expect(await settled(p)).toBe(true);
  });

  it('unref: true unref()s it', () => {
    const timers = manual((id) => ({ id }));
    void createSleep({ unref: true, timers })(500, undefined);
    expect(timers.unrefs).toBe(1);
  });

  it('where setTimeout returns a number (workerd, browsers), unref: true is a no-op, not a TypeError', async () => {
    const timers = manual((id) => id);
    const p = createSleep({ unref: true, timers })(500, undefined);
    timers.fire();
    expect(await settled(p)).toBe(true);
  });

  it('a wait past the 2^31-1 ms a timer can hold is waited in parts, never fired at once', async () => {
    const timers = manual((id) => ({ id }));
    const p = createSleep({ unref: false, timers })(MAX_TIMER_MS * 2 + 5, undefined);
    expect(timers.scheduled).toEqual([MAX_TIMER_MS]);
    timers.fire();
    expect(await settled(p)).toBe(false);
    timers.fire();
    expect(await settled(p)).toBe(false);
    expect(timers.scheduled).toEqual([MAX_TIMER_MS, MAX_TIMER_MS, 5]);
    timers.fire();
    expect(await settled(p)).toBe(true);
  });

  it('an abort resolves the wait at once and clears its timer; an aborted signal schedules nothing', async () => {
    const timers = manual((id) => ({ id }));
    const c = new AbortController();
    const p = createSleep({ unref: false, timers })(30_000, c.signal);
    c.abort();
    expect(await settled(p)).toBe(true);
    expect(timers.cleared).toHaveLength(1);
    const again = manual((id) => ({ id }));
    await createSleep({ unref: false, timers: again })(30_000, c.signal);
    expect(again.scheduled).toEqual([]);
  });

  it('with the global timers, a short real wait resolves', async () => {
    await createSleep({ unref: false })(5, undefined);
    await createSleep({ unref: true })(5, undefined);
  });
});
