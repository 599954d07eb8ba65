/** How a backoff wait is drawn from its exponential ceiling. */
export type Jitter = 'full' | 'equal' | 'decorrelated' | 'none';

/** Resolved backoff parameters, in ms. */
export interface Backoff {
  readonly base: number;
  readonly cap: number;
  readonly jitter: Jitter;
}

/**
 * The exponential ceiling before retry number `retry` (0 for the first
 * retry): min(cap, base * 2^retry).
 */
export function ceiling(b: Backoff, retry: number): number {
  // 2^1024 is Infinity, and min() keeps it at the cap.
  return Math.min(b.cap, b.base * 2 ** retry);
}

/**
 * The wait before retry number `retry` when the server gave no wait.
 *
 * - `none`: the ceiling itself (every client that failed together retries together);
 * - `full`: uniform in [0, ceiling] (the default; the least work in Brooker's simulation);
 * - `equal`: ceiling/2 + uniform in [0, ceiling/2];
 * - `decorrelated`: uniform in [base, 3 * previous], at most cap, where
 *   `previous` is the last wait this request drew (`base` before the first).
 *
 * `random()` is in [0, 1). Results are whole milliseconds.
 */
export function backoffWait(b: Backoff, retry: number, previous: number, random: () => number): number {
  const c = ceiling(b, retry);
  switch (b.jitter) {
    case 'none':
      return Math.floor(c);
    case 'full':
      return Math.floor(random() * c);
    case 'equal':
      return Math.floor(c / 2 + random() * (c / 2));
    case 'decorrelated': {
      const high = Math.max(b.base, 3 * previous);
      return Math.floor(Math.min(b.cap, b.base + random() * (high - b.base)));
    }
  }
}

/**
 * The width of the spread added to a wait the server gave (Retry-After, or
 * RateLimit `t`): a tenth of that wait, at least `base`, at most `cap`.
 * Zero with `jitter: 'none'`.
 */
export function spreadWidth(b: Backoff, serverMs: number): number {
  if (b.jitter === 'none') return 0;
  return Math.min(b.cap, Math.max(b.base, serverMs / 10));
}

/**
 * The wait for a server-given wait `serverMs`: that wait plus a uniform
 * spread in [0, spreadWidth), so clients told the same instant do not all
 * come back at it. Jitter only adds: the result is never below `serverMs`.
 */
export function serverWait(b: Backoff, serverMs: number, random: () => number): number {
  if (!Number.isFinite(serverMs)) return serverMs;
  return Math.ceil(serverMs) + Math.floor(random() * spreadWidth(b, serverMs));
}
