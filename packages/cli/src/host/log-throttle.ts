/** How often a throttled log line may repeat per key, ms. */
export const LOG_THROTTLE_MS = 5_000;

/**
 * Lines that can come once per request in an outage (a store error, a Redis
 * connection error): the first is written, then at most one per key every
 * `intervalMs`, carrying how many were left out since the last one. Keys are
 * store names and fixed reasons, which come from the configuration, so the
 * map stays as small as the contract.
 */
export class LogThrottle {
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #keys = new Map<string, { until: number; suppressed: number }>();

  constructor(intervalMs = LOG_THROTTLE_MS, now: () => number = Date.now) {
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  /** Calls `write` with the count left out since the last line of `key`, or counts this one as left out. */
  take(key: string, write: (suppressed: number) => void): void {
    const now = this.#now();
    const t = this.#keys.get(key);
    if (t !== undefined && now < t.until) {
      t.suppressed++;
      return;
    }
    write(t?.suppressed ?? 0);
    this.#keys.set(key, { until: now + this.#intervalMs, suppressed: 0 });
  }
}
