/**
 * Waits `ms` on an unref'd timer (it never keeps the process alive) and
 * resolves early when `signal` aborts. Never rejects. The HTTP layer's own
 * (queue delays); the client has its own timer, src/client/sleep.ts.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer as Parameters<typeof clearTimeout>[0]);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer: unknown = setTimeout(done, ms);
    // workerd and browsers return a number, which has no unref.
    const unref = (timer as { unref?: unknown }).unref;
    if (typeof unref === 'function') (unref as () => void).call(timer);
    signal?.addEventListener('abort', done, { once: true });
  });
}
