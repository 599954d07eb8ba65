import { ConfigError, RateContractError } from './errors.js';
import { refuseUnknown } from './options.js';
import { breakerChannel, deadConnectionChannel, storeCallChannel, type StoreFailureReason } from './events.js';
import { SilenceWatch } from './silence-watch.js';
import type { Store } from './store.js';

export type { BreakerOptions } from './store.js';

/** Default deadline of one store call, ms (see docs/fail-modes.md for the measurement behind it). */
export const DEFAULT_DEADLINE_MS = 20;
/** Default bound on store calls in flight per store. */
export const DEFAULT_MAX_IN_FLIGHT = 1000;
/** Default wait for a store to become ready (connected, scripts loaded) before checks get their fail mode, ms. */
export const DEFAULT_STARTUP_WAIT_MS = 1000;
/** The circuit breaker's defaults, one per `breaker` option (docs/fail-modes.md holds its table to these). */
export const BREAKER_DEFAULTS = Object.freeze({
  failureRate: 0.5,
  minimumCalls: 20,
  windowMs: 1000,
  failureThreshold: 3,
  cooldownMs: 200,
  maxCooldownMs: 500,
  probeSuccesses: 3,
});
/** Default silence (calls outstanding, not one reply) after which a store's connection is taken for dead, ms. */
export const DEFAULT_DEAD_CONNECTION_MS = 2000;

/** A store call missed its deadline. */
export class StoreTimeoutError extends RateContractError {
  constructor(readonly deadlineMs: number) {
    super('RC_STORE_TIMEOUT', `store call missed its ${deadlineMs} ms deadline`);
    this.name = 'StoreTimeoutError';
  }
}

/** The breaker is open (or half-open with its probe in flight): the store was not called. */
export class BreakerOpenError extends RateContractError {
  constructor() {
    super('RC_BREAKER_OPEN', 'circuit breaker open: store not called');
    this.name = 'BreakerOpenError';
  }
}

/** The store already has `maxInFlight` calls in flight: this one was not queued behind them. */
export class StoreBusyError extends RateContractError {
  constructor(readonly maxInFlight: number) {
    super('RC_STORE_BUSY', `store has ${maxInFlight} calls in flight (maxInFlight): not called`);
    this.name = 'StoreBusyError';
  }
}


/** The reason an error thrown by `StoreCircuit.run` stands for. */
export function failureReason(error: unknown): StoreFailureReason {
  if (error instanceof StoreTimeoutError) return 'timeout';
  if (error instanceof BreakerOpenError) return 'breaker-open';
  if (error instanceof StoreBusyError) return 'busy';
  return 'error';
}

export type BreakerState = 'closed' | 'open' | 'half-open';

/** One store's health as the limiter sees it (`limiter.storeHealth()`). */
export interface StoreHealth {
  readonly state: BreakerState;
  /** Failures over calls in the breaker's window (0 when the window is empty). */
  readonly failureRate: number;
  /** Calls in the breaker's window. */
  readonly calls: number;
  /** Store calls in flight now. */
  readonly inFlight: number;
  /** Whether the store has become ready (stores without `ready()` always are). */
  readonly ready: boolean;
}

function positive(v: number, option: string, integer = false): number {
  if (!Number.isFinite(v) || v <= 0 || (integer && !Number.isSafeInteger(v))) {
    throw new ConfigError('RC_INVALID_OPTION', option, `must be a positive ${integer ? 'integer' : 'number'}, got ${String(v)}`);
  }
  return v;
}

const BREAKER_KEYS: readonly string[] = ['failureRate', 'minimumCalls', 'windowMs', 'failureThreshold', 'cooldownMs', 'maxCooldownMs', 'probeSuccesses'];
const SLOTS = 10;

/**
 * The circuit between the limiter and one store (one failure domain): its
 * deadline, circuit breaker, in-flight bound and readiness gate. Internal:
 * the limiter makes one per named store.
 *
 * - Every call runs under `deadlineMs`.
 * - At most `maxInFlight` calls are in flight; a call beyond that fails at
 *   once with `StoreBusyError`, without queuing more work on the store.
 * - The breaker opens on a failure rate over a rolling window (or, under
 *   light traffic, on consecutive failures). While open, calls fail at once
 *   (`BreakerOpenError`), so a dead store costs no latency. After a
 *   cool-down it lets one probe through at a time and closes after
 *   `probeSuccesses` successful probes in a row; a failed probe doubles the
 *   cool-down, up to `maxCooldownMs`.
 * - Calls outstanding for `deadConnectionMs` with not one reply mark the
 *   store's connection as silently dead: the circuit asks the store to
 *   `reconnect()` and publishes `ratecontract:dead-connection`.
 * - Until the store is ready (its `ready()` resolved), calls wait for it, up
 *   to `startupWaitMs` from the guard's creation; the deadline starts after.
 */
export class StoreCircuit {
  readonly store: Store;
  readonly name: string;
  readonly deadlineMs: number;
  readonly maxInFlight: number;
  readonly #rate: number;
  readonly #minimumCalls: number;
  readonly #slotMs: number;
  readonly #threshold: number;
  readonly #baseCooldownMs: number;
  readonly #maxCooldownMs: number;
  readonly #probeSuccesses: number;
  #state: BreakerState = 'closed';
  #consecutive = 0;
  #openedAt = 0;
  #cooldownMs: number;
  #probing = false;
  #probeRun = 0;
  #inFlight = 0;
  /** The rolling window: calls and failures per slot of `windowMs / 10`. */
  readonly #calls = new Float64Array(SLOTS);
  readonly #fails = new Float64Array(SLOTS);
  #slot = 0;
  #slotStart = 0;
  /** Pending until the store is ready or the startup wait has passed; then undefined. */
  #gate: Promise<void> | undefined;
  #ready: boolean;
  /** Start of the current run of continuous failure, if any. */
  failingSince: number | undefined;
  /** Silence on the store's calls; undefined with `deadConnectionMs: false`. */
  readonly #silence: SilenceWatch | undefined;

  constructor(store: Store, name: string) {
    this.store = store;
    this.name = name;
    this.deadlineMs = positive(store.deadlineMs ?? DEFAULT_DEADLINE_MS, `stores.${name}.deadlineMs`);
    this.maxInFlight = positive(store.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, `stores.${name}.maxInFlight`, true);
    const b = store.breaker ?? {};
    if (b === null || typeof b !== 'object') throw new ConfigError('RC_INVALID_OPTION', `stores.${name}.breaker`, 'must be an object');
    refuseUnknown(b, BREAKER_KEYS, `stores.${name}.breaker`);
    this.#rate = positive(b.failureRate ?? BREAKER_DEFAULTS.failureRate, `stores.${name}.breaker.failureRate`);
    if (this.#rate > 1) throw new ConfigError('RC_INVALID_OPTION', `stores.${name}.breaker.failureRate`, `must be in (0, 1], got ${String(this.#rate)}`);
    this.#minimumCalls = positive(b.minimumCalls ?? BREAKER_DEFAULTS.minimumCalls, `stores.${name}.breaker.minimumCalls`, true);
    this.#slotMs = positive(b.windowMs ?? BREAKER_DEFAULTS.windowMs, `stores.${name}.breaker.windowMs`) / SLOTS;
    this.#threshold = positive(b.failureThreshold ?? BREAKER_DEFAULTS.failureThreshold, `stores.${name}.breaker.failureThreshold`, true);
    this.#baseCooldownMs = positive(b.cooldownMs ?? BREAKER_DEFAULTS.cooldownMs, `stores.${name}.breaker.cooldownMs`);
    this.#maxCooldownMs = Math.max(this.#baseCooldownMs, positive(b.maxCooldownMs ?? BREAKER_DEFAULTS.maxCooldownMs, `stores.${name}.breaker.maxCooldownMs`));
    this.#probeSuccesses = positive(b.probeSuccesses ?? BREAKER_DEFAULTS.probeSuccesses, `stores.${name}.breaker.probeSuccesses`, true);
    this.#cooldownMs = this.#baseCooldownMs;
    const startupWaitMs = store.startupWaitMs ?? DEFAULT_STARTUP_WAIT_MS;
    if (!Number.isFinite(startupWaitMs) || startupWaitMs < 0) {
      throw new ConfigError('RC_INVALID_OPTION', `stores.${name}.startupWaitMs`, `must be a non-negative number, got ${String(startupWaitMs)}`);
    }
    const dead = store.deadConnectionMs ?? DEFAULT_DEAD_CONNECTION_MS;
    if (dead !== false && (typeof dead !== 'number' || !Number.isFinite(dead) || dead <= 0)) {
      throw new ConfigError('RC_INVALID_OPTION', `stores.${name}.deadConnectionMs`, `must be a positive number of ms or false, got ${String(dead)}`);
    }
    this.#silence = dead === false ? undefined : new SilenceWatch(dead);
    this.#ready = typeof store.ready !== 'function';
    if (!this.#ready) this.#gate = this.#startGate(startupWaitMs);
  }

  get state(): BreakerState {
    return this.#state;
  }

  /** The breaker's state, failure rate, calls in flight and readiness. */
  health(now: number): StoreHealth {
    this.#roll(now);
    const { calls, fails } = this.#totals();
    return { state: this.#state, failureRate: calls === 0 ? 0 : fails / calls, calls, inFlight: this.#inFlight, ready: this.#ready };
  }

  /**
   * Runs `call` under the in-flight bound, readiness gate, deadline and
   * breaker. Rejects with the store's error, `StoreTimeoutError`,
   * `BreakerOpenError` or `StoreBusyError`.
   */
  async run<T>(call: () => Promise<T>, now: number): Promise<T> {
    if (this.#silence !== undefined) {
      const silentMs = this.#silence.check(now);
      if (silentMs !== undefined) this.#deadConnection(silentMs, now);
    }
    if (this.#inFlight >= this.maxInFlight) throw new StoreBusyError(this.maxInFlight);
    let probe = false;
    if (this.#state === 'open') {
      if (now - this.#openedAt < this.#cooldownMs) throw new BreakerOpenError();
      this.#transition('half-open', now);
    }
    if (this.#state === 'half-open') {
      if (this.#probing) throw new BreakerOpenError();
      this.#probing = true;
      probe = true;
    }
    this.#inFlight++;
    // Timed only while someone listens on store-call: the readiness wait is not part of the call.
    let started = -1;
    try {
      if (this.#gate !== undefined) await this.#gate;
      if (storeCallChannel.hasSubscribers) started = performance.now();
      const pending = call();
      this.#silence?.issued(now, pending);
      const value = await withDeadline(pending, this.deadlineMs);
      if (started >= 0) this.#timed(started, true);
      this.#succeeded(now, probe);
      return value;
    } catch (error) {
      if (started >= 0) this.#timed(started, false);
      this.#failed(now, probe);
      throw error;
    } finally {
      this.#inFlight--;
      if (probe) this.#probing = false;
    }
  }

  /** Records a synchronous store's outcome (no deadline or breaker applies to in-process stores). */
  record(ok: boolean, now: number): void {
    if (ok) {
      this.#consecutive = 0;
      this.failingSince = undefined;
    } else {
      this.failingSince ??= now;
      this.#consecutive++;
    }
  }

  /**
   * The store's calls have been silent for `deadConnectionMs`: ask it to
   * replace its connection, and say so. An open breaker then probes the new
   * connection after the base cool-down (a reconnect takes tens of ms), not
   * after the grown one.
   */
  #deadConnection(silentMs: number, now: number): void {
    let reconnected = false;
    try {
      reconnected = this.store.reconnect?.() === true;
    } catch {
      // A store's reconnect must not throw; if it does, the check still gets its fail mode.
    }
    if (reconnected && this.#state === 'open') {
      this.#cooldownMs = this.#baseCooldownMs;
      this.#openedAt = now;
    }
    if (deadConnectionChannel.hasSubscribers) {
      deadConnectionChannel.publish({ store: this.name, kind: this.store.kind, silentMs, outstanding: this.#silence?.outstanding ?? 0, reconnected });
    }
  }

  #timed(started: number, ok: boolean): void {
    storeCallChannel.publish({ store: this.name, kind: this.store.kind, durationMs: performance.now() - started, ok });
  }

  #startGate(startupWaitMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const open = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      this.#gate = undefined;
    };
    const ready = (this.store.ready as () => Promise<void>).call(this.store).then(
      () => {
        this.#ready = true;
        open();
      },
      // A store that can never become ready (its client was closed) is a failing store: calls go on and fail.
      open,
    );
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        open();
        resolve();
      }, startupWaitMs);
      timer.unref();
    });
    return Promise.race([ready, waited]);
  }

  #succeeded(now: number, probe: boolean): void {
    this.#consecutive = 0;
    this.failingSince = undefined;
    this.#count(now, false);
    if (!probe) return;
    if (++this.#probeRun >= this.#probeSuccesses) {
      this.#probeRun = 0;
      this.#cooldownMs = this.#baseCooldownMs;
      this.#calls.fill(0);
      this.#fails.fill(0);
      this.#transition('closed', now);
    }
  }

  #failed(now: number, probe: boolean): void {
    this.failingSince ??= now;
    this.#consecutive++;
    this.#count(now, true);
    if (probe) {
      this.#probeRun = 0;
      this.#cooldownMs = Math.min(this.#cooldownMs * 2, this.#maxCooldownMs);
      this.#openedAt = now;
      this.#transition('open', now);
      return;
    }
    if (this.#state !== 'closed') return;
    const { calls, fails } = this.#totals();
    if (calls >= this.#minimumCalls ? fails >= calls * this.#rate : this.#consecutive >= this.#threshold) {
      this.#openedAt = now;
      this.#transition('open', now);
    }
  }

  /** Moves the window's current slot forward to `now`, clearing the slots it passes. */
  #roll(now: number): void {
    const steps = Math.floor((now - this.#slotStart) / this.#slotMs);
    if (steps <= 0) return;
    for (let i = 0; i < Math.min(steps, SLOTS); i++) {
      this.#slot = (this.#slot + 1) % SLOTS;
      this.#calls[this.#slot] = 0;
      this.#fails[this.#slot] = 0;
    }
    this.#slotStart += steps * this.#slotMs;
  }

  #count(now: number, failed: boolean): void {
    if (now < this.#slotStart) now = this.#slotStart;
    if (this.#slotStart === 0) this.#slotStart = now;
    this.#roll(now);
    this.#calls[this.#slot] = (this.#calls[this.#slot] as number) + 1;
    if (failed) this.#fails[this.#slot] = (this.#fails[this.#slot] as number) + 1;
  }

  #totals(): { calls: number; fails: number } {
    let calls = 0;
    let fails = 0;
    for (let i = 0; i < SLOTS; i++) {
      calls += this.#calls[i] as number;
      fails += this.#fails[i] as number;
    }
    return { calls, fails };
  }

  #transition(to: BreakerState, now: number): void {
    const from = this.#state;
    this.#state = to;
    if (breakerChannel.hasSubscribers) {
      const { calls, fails } = this.#totals();
      breakerChannel.publish({ store: this.name, kind: this.store.kind, from, to, now, failureRate: calls === 0 ? 0 : fails / calls, calls });
    }
  }
}

/** A gap between the deadline timer's callback and the check phase longer than this (ms) means the loop was busy in between. */
const LOOP_STALL_MS = 2;

/**
 * Resolves or rejects like `promise`, or rejects with `StoreTimeoutError`
 * after `ms`. The deadline measures the store, not this process's event
 * loop: when the timer fires, the rejection waits for the I/O phase of the
 * loop to pass (`setImmediate`), so a reply that arrived while the loop was
 * stalled (GC, a long task, a preemption) still wins. If the loop was busy
 * between the timer and that check (an I/O callback ran long, or the
 * process was descheduled), a reply may have arrived after the I/O phase
 * polled; the rejection then waits for one more I/O phase.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let firedAt = 0;
    let looked = false;
    const expire = (): void => {
      if (settled) return;
      if (!looked && performance.now() - firedAt > LOOP_STALL_MS) {
        looked = true;
        setImmediate(expire);
        return;
      }
      settled = true;
      reject(new StoreTimeoutError(ms));
    };
    const timer = setTimeout(() => {
      firedAt = performance.now();
      setImmediate(expire);
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
