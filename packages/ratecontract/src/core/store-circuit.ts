import { ConfigError, RateContractError } from './errors.js';
import { refuseUnknown } from './options.js';
import { breakerChannel, deadConnectionChannel, storeCallChannel, type StoreFailureReason } from './events.js';
import { SilenceWatch } from './silence-watch.js';
import type { Store, StoreOp } from './store.js';
import { endOfTick, monotonicNow, nextTurn, unrefTimer } from './timers.js';

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
  /**
   * A store with failure domains of its own (a Redis Cluster's masters, see
   * `Store.domains`): each node's breaker. `state` is then the worst of them
   * and of the store's own breaker; `failureRate` and `calls` are over all.
   */
  readonly nodes?: Readonly<Record<string, NodeHealth>> | undefined;
}

/** One failure domain's breaker (`StoreHealth.nodes`). */
export interface NodeHealth {
  readonly state: BreakerState;
  readonly failureRate: number;
  readonly calls: number;
}

function positive(v: number, option: string, integer = false): number {
  if (!Number.isFinite(v) || v <= 0 || (integer && !Number.isSafeInteger(v))) {
    throw new ConfigError('RC_INVALID_OPTION', option, `must be a positive ${integer ? 'integer' : 'number'}, got ${String(v)}`);
  }
  return v;
}

const BREAKER_KEYS: readonly string[] = ['failureRate', 'minimumCalls', 'windowMs', 'failureThreshold', 'cooldownMs', 'maxCooldownMs', 'probeSuccesses'];
const SLOTS = 10;

/** One breaker's state: the store's own, or one failure domain's (a Cluster node). */
class Breaker {
  state: BreakerState = 'closed';
  consecutive = 0;
  openedAt = 0;
  cooldownMs: number;
  probing = false;
  probeRun = 0;
  /** The rolling window: calls and failures per slot of `windowMs / 10`. */
  readonly calls = new Float64Array(SLOTS);
  readonly fails = new Float64Array(SLOTS);
  slot = 0;
  slotStart = 0;
  /** Start of the current run of continuous failure, if any. */
  failingSince: number | undefined;
  /** A failure domain's own silence watch (calls that touch it alone); undefined for the store's own breaker or with `deadConnectionMs: false`. */
  readonly silence: SilenceWatch | undefined;
  constructor(
    /** The failure domain's name; undefined for the store's own breaker. */
    readonly node: string | undefined,
    cooldownMs: number,
    silence?: SilenceWatch,
  ) {
    this.cooldownMs = cooldownMs;
    this.silence = silence;
  }
}

const WORSE: Readonly<Record<BreakerState, number>> = { closed: 0, 'half-open': 1, open: 2 };

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
  /** The store's own breaker (every call of a store without failure domains). */
  readonly #main: Breaker;
  /** One breaker per failure domain, for a store with `domains()` (a Redis Cluster: one per master); else undefined. */
  readonly #nodes: Map<string, Breaker> | undefined;
  #inFlight = 0;
  /** Pending until the store is ready or the startup wait has passed; then undefined. */
  #gate: Promise<void> | undefined;
  #ready: boolean;
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
    this.#main = new Breaker(undefined, this.#baseCooldownMs);
    this.#nodes = typeof store.domains === 'function' ? new Map() : undefined;
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

  /** The breaker's state; with failure domains, the worst of the store's own and every domain's. */
  get state(): BreakerState {
    let state = this.#main.state;
    if (this.#nodes !== undefined) for (const b of this.#nodes.values()) if (WORSE[b.state] > WORSE[state]) state = b.state;
    return state;
  }

  /** Start of the store's current run of continuous failure (its own breaker's), if any. */
  get failingSince(): number | undefined {
    return this.#main.failingSince;
  }

  /**
   * Since when the store has failed continuously for a call of `ops`: with
   * failure domains, the earliest among the failing domains the call goes
   * to (so a `closed` limit fails closed after its grace when a node its
   * check needs has been unreachable that long, whatever the other nodes do).
   */
  failingSinceOf(ops: readonly StoreOp[]): number | undefined {
    const names = this.#nodes === undefined || ops.length === 0 ? undefined : this.#domainsOf(ops);
    if (names === undefined) return this.#main.failingSince;
    let since: number | undefined;
    for (const n of names) {
      const f = this.#nodes?.get(n)?.failingSince;
      if (f !== undefined && (since === undefined || f < since)) since = f;
    }
    return since;
  }

  /** The breaker's state, failure rate, calls in flight and readiness (and each domain's breaker, with failure domains). */
  health(now: number): StoreHealth {
    this.#roll(this.#main, now);
    let { calls, fails } = this.#totals(this.#main);
    const base = { inFlight: this.#inFlight, ready: this.#ready };
    if (this.#nodes === undefined) return { state: this.#main.state, failureRate: calls === 0 ? 0 : fails / calls, calls, ...base };
    const nodes: Record<string, NodeHealth> = {};
    for (const [name, b] of this.#nodes) {
      this.#roll(b, now);
      const t = this.#totals(b);
      calls += t.calls;
      fails += t.fails;
      nodes[name] = { state: b.state, failureRate: t.calls === 0 ? 0 : t.fails / t.calls, calls: t.calls };
    }
    return { state: this.state, failureRate: calls === 0 ? 0 : fails / calls, calls, ...base, nodes };
  }

  /**
   * Runs `call` under the in-flight bound, readiness gate, deadline and
   * breaker. Rejects with the store's error, `StoreTimeoutError`,
   * `BreakerOpenError` or `StoreBusyError`. With `ops` and a store that has
   * failure domains (`Store.domains`), the call goes through the breakers of
   * the domains it touches instead of the store's own: it is refused at once
   * if one of them is open, and its outcome counts for each of them (a
   * failure only for those the store says did not answer).
   */
  async run<T>(call: () => Promise<T>, now: number, ops?: readonly StoreOp[]): Promise<T> {
    if (ops !== undefined && this.#nodes !== undefined) {
      const names = this.#domainsOf(ops);
      if (names !== undefined) return this.#runRouted(call, now, ops, names);
    }
    this.#watch(now);
    if (this.#inFlight >= this.maxInFlight) throw new StoreBusyError(this.maxInFlight);
    const b = this.#main;
    let probe = false;
    if (b.state === 'open') {
      if (now - b.openedAt < b.cooldownMs) throw new BreakerOpenError();
      this.#transition(b, 'half-open', now);
    }
    if (b.state === 'half-open') {
      if (b.probing) throw new BreakerOpenError();
      b.probing = true;
      probe = true;
    }
    this.#inFlight++;
    // Timed only while someone listens on store-call: the readiness wait is not part of the call.
    let started = -1;
    try {
      if (this.#gate !== undefined) await this.#gate;
      if (storeCallChannel.hasSubscribers) started = monotonicNow();
      const pending = call();
      this.#silence?.issued(now, pending);
      const value = await withDeadline(pending, this.deadlineMs);
      if (started >= 0) this.#timed(started, true);
      this.#succeeded(b, now, probe);
      return value;
    } catch (error) {
      if (started >= 0) this.#timed(started, false);
      this.#failed(b, now, probe);
      throw error;
    } finally {
      this.#inFlight--;
      if (probe) b.probing = false;
    }
  }

  /** The failure domains a call of `ops` touches, or undefined (the store's own breaker). */
  #domainsOf(ops: readonly StoreOp[]): readonly string[] | undefined {
    let names: readonly string[] | undefined;
    try {
      names = this.store.domains?.(ops);
    } catch {
      // A store's domains() must not throw; if it does, the store's own breaker guards the call.
      return undefined;
    }
    return names === undefined || names.length === 0 ? undefined : names;
  }

  #node(name: string): Breaker {
    const nodes = this.#nodes as Map<string, Breaker>;
    let b = nodes.get(name);
    if (b === undefined) nodes.set(name, (b = new Breaker(name, this.#baseCooldownMs, this.#silence === undefined ? undefined : new SilenceWatch(this.#silence.afterMs))));
    return b;
  }

  async #runRouted<T>(call: () => Promise<T>, now: number, ops: readonly StoreOp[], names: readonly string[]): Promise<T> {
    this.#watch(now);
    if (this.#inFlight >= this.maxInFlight) throw new StoreBusyError(this.maxInFlight);
    const breakers = names.map((n) => this.#node(n));
    // Refused if any domain it needs is open (still cooling down) or half-open with its probe out; decided before any change.
    for (const b of breakers) {
      if ((b.state === 'open' && now - b.openedAt < b.cooldownMs) || (b.state === 'half-open' && b.probing)) throw new BreakerOpenError();
    }
    const probes: Breaker[] = [];
    for (const b of breakers) {
      if (b.state === 'open') this.#transition(b, 'half-open', now);
      if (b.state === 'half-open') {
        b.probing = true;
        probes.push(b);
      }
    }
    this.#inFlight++;
    let started = -1;
    try {
      if (this.#gate !== undefined) await this.#gate;
      if (storeCallChannel.hasSubscribers) started = monotonicNow();
      const pending = call();
      this.#silence?.issued(now, pending);
      // A call that touches one domain settles with that domain's reply: its silence is that node's.
      if (breakers.length === 1) breakers[0]?.silence?.issued(now, pending);
      const value = await withDeadline(pending, this.deadlineMs);
      if (started >= 0) this.#timed(started, true);
      for (const b of breakers) this.#succeeded(b, now, probes.includes(b));
      return value;
    } catch (error) {
      if (started >= 0) this.#timed(started, false);
      let answered: readonly string[] = [];
      try {
        answered = this.store.answered?.(ops) ?? [];
      } catch {
        // As if none answered.
      }
      for (const b of breakers) {
        if (answered.includes(b.node as string)) this.#succeeded(b, now, probes.includes(b));
        else this.#failed(b, now, probes.includes(b));
      }
      throw error;
    } finally {
      this.#inFlight--;
      for (const b of probes) b.probing = false;
    }
  }

  /** The dead-connection watch, before each call: the store's, and each failure domain's. */
  #watch(now: number): void {
    if (this.#silence === undefined) return;
    const silentMs = this.#silence.check(now);
    if (silentMs !== undefined) this.#deadConnection(silentMs, now, this.#main);
    if (this.#nodes === undefined) return;
    for (const b of this.#nodes.values()) {
      const nodeSilentMs = b.silence?.check(now);
      if (nodeSilentMs !== undefined) this.#deadConnection(nodeSilentMs, now, b);
    }
  }

  /** Records a synchronous store's outcome (no deadline or breaker applies to in-process stores). */
  record(ok: boolean, now: number): void {
    const b = this.#main;
    if (ok) {
      b.consecutive = 0;
      b.failingSince = undefined;
    } else {
      b.failingSince ??= now;
      b.consecutive++;
    }
  }

  /**
   * The store's calls have been silent for `deadConnectionMs`: ask it to
   * replace its connection, and say so. An open breaker then probes the new
   * connection after the base cool-down (a reconnect takes tens of ms), not
   * after the grown one.
   */
  #deadConnection(silentMs: number, now: number, b: Breaker): void {
    let reconnected = false;
    try {
      reconnected = (b.node === undefined ? this.store.reconnect?.() : this.store.reconnect?.(b.node)) === true;
    } catch {
      // A store's reconnect must not throw; if it does, the check still gets its fail mode.
    }
    if (reconnected && b.state === 'open') {
      b.cooldownMs = this.#baseCooldownMs;
      b.openedAt = now;
    }
    if (deadConnectionChannel.hasSubscribers) {
      const outstanding = (b.node === undefined ? this.#silence : b.silence)?.outstanding ?? 0;
      deadConnectionChannel.publish({ store: this.name, kind: this.store.kind, silentMs, outstanding, reconnected, node: b.node });
    }
  }

  #timed(started: number, ok: boolean): void {
    storeCallChannel.publish({ store: this.name, kind: this.store.kind, durationMs: monotonicNow() - started, ok });
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
      unrefTimer(timer);
    });
    return Promise.race([ready, waited]);
  }

  #succeeded(b: Breaker, now: number, probe: boolean): void {
    b.consecutive = 0;
    b.failingSince = undefined;
    this.#count(b, now, false);
    if (!probe) return;
    if (++b.probeRun >= this.#probeSuccesses) {
      b.probeRun = 0;
      b.cooldownMs = this.#baseCooldownMs;
      b.calls.fill(0);
      b.fails.fill(0);
      this.#transition(b, 'closed', now);
    }
  }

  #failed(b: Breaker, now: number, probe: boolean): void {
    b.failingSince ??= now;
    b.consecutive++;
    this.#count(b, now, true);
    if (probe) {
      b.probeRun = 0;
      b.cooldownMs = Math.min(b.cooldownMs * 2, this.#maxCooldownMs);
      b.openedAt = now;
      this.#transition(b, 'open', now);
      return;
    }
    if (b.state !== 'closed') return;
    const { calls, fails } = this.#totals(b);
    if (calls >= this.#minimumCalls ? fails >= calls * this.#rate : b.consecutive >= this.#threshold) {
      b.openedAt = now;
      this.#transition(b, 'open', now);
    }
  }

  /** Moves the window's current slot forward to `now`, clearing the slots it passes. */
  #roll(b: Breaker, now: number): void {
    const steps = Math.floor((now - b.slotStart) / this.#slotMs);
    if (steps <= 0) return;
    for (let i = 0; i < Math.min(steps, SLOTS); i++) {
      b.slot = (b.slot + 1) % SLOTS;
      b.calls[b.slot] = 0;
      b.fails[b.slot] = 0;
    }
    b.slotStart += steps * this.#slotMs;
  }

  #count(b: Breaker, now: number, failed: boolean): void {
    if (now < b.slotStart) now = b.slotStart;
    if (b.slotStart === 0) b.slotStart = now;
    this.#roll(b, now);
    b.calls[b.slot] = (b.calls[b.slot] as number) + 1;
    if (failed) b.fails[b.slot] = (b.fails[b.slot] as number) + 1;
  }

  #totals(b: Breaker): { calls: number; fails: number } {
    let calls = 0;
    let fails = 0;
    for (let i = 0; i < SLOTS; i++) {
      calls += b.calls[i] as number;
      fails += b.fails[i] as number;
    }
    return { calls, fails };
  }

  #transition(b: Breaker, to: BreakerState, now: number): void {
    const from = b.state;
    b.state = to;
    if (breakerChannel.hasSubscribers) {
      const { calls, fails } = this.#totals(b);
      breakerChannel.publish({ store: this.name, kind: this.store.kind, from, to, now, failureRate: calls === 0 ? 0 : fails / calls, calls, node: b.node });
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
  let cohort = openCohorts.get(ms);
  if (cohort === undefined) cohort = openCohort(ms);
  const c = cohort;
  return new Promise<T>((resolve, reject) => {
    const entry: Deadline = { reject, settled: false };
    c.entries.push(entry);
    c.open++;
    promise.then(
      (value) => {
        if (entry.settled) return;
        settle(c, entry);
        resolve(value);
      },
      (error: unknown) => {
        if (entry.settled) return;
        settle(c, entry);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** One call waiting on its deadline. */
interface Deadline {
  readonly reject: (error: StoreTimeoutError) => void;
  settled: boolean;
}

/**
 * The calls of one deadline length made in one pass of the event loop
 * (until the next `process.nextTick`), under one timer. Node starts every
 * timer set in one pass at the same instant (the loop's cached time), so
 * one timer for them all expires each call exactly when a timer of its own
 * would; a batch of checks costs one timer instead of one per check (a
 * timer set and cleared per check cost the client about a microsecond per
 * check under load, most of it in the timer lists' priority queue). The
 * timer is cleared once every call of the cohort has settled.
 */
interface Cohort {
  readonly ms: number;
  readonly entries: Deadline[];
  open: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** The cohort still taking calls, per deadline length. */
const openCohorts = new Map<number, Cohort>();

function openCohort(ms: number): Cohort {
  const c: Cohort = { ms, entries: [], open: 0, timer: undefined };
  c.timer = setTimeout(() => {
    c.timer = undefined;
    const firedAt = monotonicNow();
    nextTurn(() => expire(c, firedAt, false));
  }, ms);
  openCohorts.set(ms, c);
  endOfTick(() => {
    if (openCohorts.get(ms) !== c) return;
    openCohorts.delete(ms);
    if (c.open === 0 && c.timer !== undefined) {
      clearTimeout(c.timer);
      c.timer = undefined;
    }
  });
  return c;
}

function settle(c: Cohort, entry: Deadline): void {
  entry.settled = true;
  // The cohort is done once it takes no more calls and every call has settled.
  if (--c.open === 0 && c.timer !== undefined && openCohorts.get(c.ms) !== c) {
    clearTimeout(c.timer);
    c.timer = undefined;
  }
}

/** Rejects the cohort's unsettled calls, once the I/O phase has passed (see withDeadline). */
function expire(c: Cohort, firedAt: number, looked: boolean): void {
  if (!looked && monotonicNow() - firedAt > LOOP_STALL_MS) {
    nextTurn(() => expire(c, firedAt, true));
    return;
  }
  if (openCohorts.get(c.ms) === c) openCohorts.delete(c.ms);
  for (const e of c.entries) {
    if (e.settled) continue;
    e.settled = true;
    c.open--;
    e.reject(new StoreTimeoutError(c.ms));
  }
}
