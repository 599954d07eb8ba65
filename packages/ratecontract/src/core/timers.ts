/**
 * Timers and a monotonic clock that work on every runtime the library runs
 * on (Node, Bun, Deno, workerd; docs/runtimes.md). What differs:
 *
 * - `setTimeout` returns an object with `unref()` on Node, Bun and Deno, a
 *   number on workerd (and in browsers): `unrefTimer` unrefs where it can.
 * - `setImmediate` is missing in browsers and may be missing on workerd
 *   without `nodejs_compat`: `nextTurn` falls back to `setTimeout(fn, 0)`.
 * - `performance.now()` is monotonic on Node, Bun and Deno; on workerd it
 *   returns epoch milliseconds that advance only across I/O (a Spectre
 *   mitigation), and `process.hrtime` is missing. `monotonicNow` reads
 *   `performance.now()` where it exists, else `Date.now()`, and never goes
 *   backwards.
 */

/** A timer handle of any runtime: an object (Node, Bun, Deno) or a number (workerd, browsers). */
export type TimerHandle = ReturnType<typeof setTimeout> | number;

/** `timer.unref()` where the runtime's timer has it (Node, Bun, Deno); nothing where `setTimeout` returned a number. Returns the timer. */
export function unrefTimer<T>(timer: T): T {
  const unref = (timer as { unref?: unknown } | null | undefined)?.unref;
  if (typeof unref === 'function') (unref as () => void).call(timer);
  return timer;
}

const immediate: ((fn: () => void) => void) | undefined =
  typeof (globalThis as { setImmediate?: unknown }).setImmediate === 'function' ? (fn) => void (globalThis as unknown as { setImmediate: (fn: () => void) => unknown }).setImmediate(fn) : undefined;

/** Runs `fn` after the current turn's I/O: `setImmediate` where it exists, else `setTimeout(fn, 0)`. */
export function nextTurn(fn: () => void): void {
  if (immediate !== undefined) immediate(fn);
  else setTimeout(fn, 0);
}

const perf: { now(): number } | undefined = typeof globalThis.performance?.now === 'function' ? globalThis.performance : undefined;
let lastMonotonic = -Infinity;

/**
 * Milliseconds from an arbitrary origin that never decrease, for measuring
 * elapsed time on every runtime: `performance.now()` where it exists (on
 * workerd, epoch ms that move only across I/O), else `Date.now()`; a reading
 * below the previous one (a clock step) returns the previous one.
 */
export function monotonicNow(): number {
  const t = perf !== undefined ? perf.now() : Date.now();
  if (t > lastMonotonic) lastMonotonic = t;
  return lastMonotonic;
}

const processNextTick: ((fn: () => void) => void) | undefined = (() => {
  const p = (globalThis as { process?: { nextTick?: unknown } }).process;
  return typeof p?.nextTick === 'function' ? (fn: () => void) => (p.nextTick as (fn: () => void) => void)(fn) : undefined;
})();

/** Runs `fn` at the end of the current tick: `process.nextTick` where it exists (Node, Bun, Deno, workerd with the Node APIs), else `queueMicrotask`. */
export function endOfTick(fn: () => void): void {
  if (processNextTick !== undefined) processNextTick(fn);
  else queueMicrotask(fn);
}
