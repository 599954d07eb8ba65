import { afterEach, describe, expect, it, vi } from 'vitest';
import { InFlight } from '../../../packages/cli/src/host/in-flight.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('InFlight', () => {
  it('drain resolves with 0 at once when nothing is in flight', async () => {
    expect(await new InFlight().drain(10_000)).toBe(0);
  });

  it('drain waits for the last request, however long the bound', async () => {
    vi.useFakeTimers();
    const f = new InFlight();
    f.enter();
    f.enter();
    let done: number | undefined;
    void f.drain(60_000).then((n) => (done = n));
    f.leave();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(done).toBeUndefined();
    f.leave();
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(0);
  });

  it('past the bound, drain resolves with what is left (what the bound cuts)', async () => {
    vi.useFakeTimers();
    const f = new InFlight();
    f.enter();
    f.enter();
    f.enter();
    f.leave();
    let done: number | undefined;
    void f.drain(500).then((n) => (done = n));
    await vi.advanceTimersByTimeAsync(499);
    expect(done).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(2);
    expect(f.count).toBe(2);
  });
});
