/**
 * The client's own timer: the wait before a retry or a paced send. It is
 * work the caller awaits, so by default it keeps the process alive (a
 * script that awaits the call would otherwise exit in the middle of it).
 * Runtime-neutral: on workerd and in browsers `setTimeout` returns a
 * number, which has no `unref`.
 */

/** The timer functions the wait uses (the globals by default; a test passes its own). */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The longest delay a timer holds (2^31 - 1 ms, about 24.8 days); a longer one would fire at once. */
export const MAX_TIMER_MS = 2_147_483_647;

const globalTimers: Timers = {
  // Read at each call, so a runtime's (or a test's) replacement is the one used.
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as Parameters<typeof clearTimeout>[0]),
};

function unrefIfPossible(handle: unknown): void {
  const unref = (handle as { unref?: unknown } | null)?.unref;
  if (typeof unref === 'function') (unref as () => void).call(handle);
}

/**
 * A sleep that waits `ms` and resolves early when `signal` aborts; it never
 * rejects. With `unref: true` the timer does not keep the process alive.
 * A wait longer than `MAX_TIMER_MS` is waited in parts.
 */
export function createSleep(options: { readonly unref: boolean; readonly timers?: Timers }): (ms: number, signal: AbortSignal | undefined) => Promise<void> {
  const timers = options.timers ?? globalTimers;
  const { unref } = options;
  return (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted === true) {
        resolve();
        return;
      }
      let left = Math.max(0, ms);
      let handle: unknown;
      const finish = (): void => {
        timers.clearTimeout(handle);
        signal?.removeEventListener('abort', finish);
        resolve();
      };
      const arm = (): void => {
        const part = Math.min(left, MAX_TIMER_MS);
        left -= part;
        handle = timers.setTimeout(left > 0 ? arm : finish, part);
        if (unref) unrefIfPossible(handle);
      };
      signal?.addEventListener('abort', finish, { once: true });
      arm();
    });
}
