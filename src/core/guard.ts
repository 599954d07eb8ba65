import { ConfigError } from './errors.js';
import { breakerChannel } from './events.js';
import type { Store } from './store.js';

/** Circuit breaker settings of one store. */
export interface BreakerOptions {
  /** Consecutive failures (errors or missed deadlines) that open the breaker. Default 3. */
  readonly failureThreshold?: number | undefined;
  /** How long an open breaker skips the store before one probe call is let through, ms. Default 1000. */
  readonly cooldownMs?: number | undefined;
}

/** Default deadline of one store call, ms. */
export const DEFAULT_DEADLINE_MS = 8;

/** Error used when a store call misses its deadline. */
export class StoreTimeoutError extends Error {
  constructor(readonly deadlineMs: number) {
    super(`store call missed its ${deadlineMs} ms deadline`);
    this.name = 'StoreTimeoutError';
  }
}

/** Error used when the breaker is open and the store is not called at all. */
export class BreakerOpenError extends Error {
  constructor() {
    super('circuit breaker open: store not called');
    this.name = 'BreakerOpenError';
  }
}

export type BreakerState = 'closed' | 'open' | 'half-open';

function positive(v: number, option: string): number {
  if (!Number.isFinite(v) || v <= 0) throw new ConfigError('RC_INVALID_OPTION', option, `must be a positive number, got ${String(v)}`);
  return v;
}

/**
 * Deadline and circuit breaker for one store (one failure domain). While the
 * breaker is open, calls fail at once without touching the store, so a dead
 * store costs no latency; after `cooldownMs` a single probe is let through
 * and its success closes the breaker.
 */
export class StoreGuard {
  readonly store: Store;
  readonly name: string;
  readonly deadlineMs: number;
  readonly #threshold: number;
  readonly #cooldownMs: number;
  #state: BreakerState = 'closed';
  #failures = 0;
  #openedAt = 0;
  #probing = false;
  /** Start of the current run of continuous failure, if any. */
  failingSince: number | undefined;

  constructor(store: Store, name: string) {
    this.store = store;
    this.name = name;
    this.deadlineMs = positive(store.deadlineMs ?? DEFAULT_DEADLINE_MS, `stores.${name}.deadlineMs`);
    this.#threshold = positive(store.breaker?.failureThreshold ?? 3, `stores.${name}.breaker.failureThreshold`);
    this.#cooldownMs = positive(store.breaker?.cooldownMs ?? 1000, `stores.${name}.breaker.cooldownMs`);
  }

  get state(): BreakerState {
    return this.#state;
  }

  /** Runs `call` under the deadline and breaker. Rejects with the store's error, a `StoreTimeoutError` or a `BreakerOpenError`. */
  async run<T>(call: () => Promise<T>, now: number): Promise<T> {
    let probe = false;
    if (this.#state === 'open') {
      if (now - this.#openedAt < this.#cooldownMs || this.#probing) throw new BreakerOpenError();
      this.#transition('half-open', now);
    }
    if (this.#state === 'half-open') {
      if (this.#probing) throw new BreakerOpenError();
      this.#probing = true;
      probe = true;
    }
    try {
      const value = await withDeadline(call(), this.deadlineMs);
      this.#failures = 0;
      this.failingSince = undefined;
      if (this.#state !== 'closed') this.#transition('closed', now);
      return value;
    } catch (error) {
      this.failingSince ??= now;
      this.#failures++;
      if (this.#state === 'half-open' || this.#failures >= this.#threshold) {
        this.#openedAt = now;
        if (this.#state !== 'open') this.#transition('open', now);
      }
      throw error;
    } finally {
      if (probe) this.#probing = false;
    }
  }

  /** Records a synchronous store's outcome (no deadline applies to in-process stores). */
  record(ok: boolean, now: number): void {
    if (ok) {
      this.#failures = 0;
      this.failingSince = undefined;
    } else {
      this.failingSince ??= now;
      this.#failures++;
    }
  }

  #transition(to: BreakerState, now: number): void {
    const from = this.#state;
    this.#state = to;
    if (breakerChannel.hasSubscribers) breakerChannel.publish({ store: this.name, kind: this.store.kind, from, to, now });
  }
}

/**
 * Resolves or rejects like `promise`, or rejects with `StoreTimeoutError`
 * after `ms`. When the timer fires, the rejection waits for the I/O phase of
 * the event loop to pass once (`setImmediate`), so a reply that arrived
 * while the loop was stalled (GC, a long task) still wins.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (settled) return;
        settled = true;
        reject(new StoreTimeoutError(ms));
      });
    }, ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        if (settled) return;
        settled = true;
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        if (settled) return;
        settled = true;
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
