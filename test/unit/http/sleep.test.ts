import { afterEach, describe, expect, it, vi } from 'vitest';
import { sleep } from '../../../packages/ratecontract/src/http/sleep.js';

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('the http layer sleep (queue delays)', () => {
  it('where setTimeout returns a number (workerd, browsers), it still waits instead of throwing on unref', async () => {
    const real = globalThis.setTimeout;
    const realClear = globalThis.clearTimeout;
    const handles = new Map<number, ReturnType<typeof setTimeout>>();
    let next = 1;
    vi.stubGlobal('setTimeout', (fn: () => void, ms: number) => {
      const id = next++;
      handles.set(id, real(fn, ms));
      return id;
    });
    vi.stubGlobal('clearTimeout', (id: number) => realClear(handles.get(id)));
    await expect(sleep(5)).resolves.toBeUndefined();
    expect(next).toBe(2);
  });
});
