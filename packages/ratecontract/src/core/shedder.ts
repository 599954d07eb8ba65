import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { systemClock, type Clock } from './clock.js';
import { parseDuration, type Duration } from './duration.js';
import { ConfigError } from './errors.js';
import { refuseUnknown } from './options.js';

/** `createShedder()`'s defaults (docs/shedding.md holds its table to these); `maxInFlight` is `ceil(target x maxInFlightPerTarget)` for the in-flight driver. */
export const SHEDDER_DEFAULTS = Object.freeze({
  driver: 'in-flight',
  maxInFlightPerTarget: 1.5,
  criticalReserve: 0.2,
  intervalMs: 250,
  decrease: 0.75,
  increase: 0.05,
  lowWater: 0.8,
  retryAfterMs: 1000,
} as const);

/** How much a request matters when the process is overloaded: `sheddable` goes first, then `default`; `critical` keeps a reserve. */
export type Criticality = 'critical' | 'default' | 'sheddable';

/** The classes, most critical first. */
export const CRITICALITIES: readonly Criticality[] = Object.freeze(['critical', 'default', 'sheddable']);

/**
 * What the shedder steers by: one reading per control step, compared with
 * `target`. `inFlight` is the most requests the shedder saw in flight since
 * the last reading.
 */
export interface ShedDriver {
  /** `'in-flight'`, `'event-loop-delay'`, or a name of your own (for `stats()`). */
  readonly name: string;
  read(peakInFlight: number): number;
  /** Stops whatever the driver started (the event-loop histogram). */
  close?(): void;
}

/** Options of `createShedder`. */
export interface ShedderOptions {
  /**
   * What the shedder steers by. `'in-flight'` (default): the most requests
   * in flight (admitted, response not finished) during a step.
   * `'event-loop-delay'`: the p99 event-loop delay during a step in ms,
   * from `perf_hooks.monitorEventLoopDelay`. Or a `ShedDriver`.
   */
  readonly driver?: 'in-flight' | 'event-loop-delay' | ShedDriver | undefined;
  /**
   * The reading the shedder keeps the process at or below: requests in
   * flight for `'in-flight'`, milliseconds of p99 delay for
   * `'event-loop-delay'`. Required; a positive number.
   */
  readonly target: number;
  /**
   * Hard cap on requests in flight; `criticalReserve` of it is for
   * critical requests only. Default: 1.5 x target with the in-flight
   * driver, no cap with the others.
   */
  readonly maxInFlight?: number | undefined;
  /**
   * Share of `maxInFlight` that only critical requests may use (0 to 1):
   * `default` and `sheddable` requests are refused once
   * `maxInFlight - ceil(maxInFlight x criticalReserve)` are in flight.
   * Default 0.2.
   */
  readonly criticalReserve?: number | undefined;
  /** Length of one control step. Default `'250ms'`. */
  readonly interval?: Duration | undefined;
  /** Factor the admitted share is multiplied by after a step over target (0 < f < 1). Default 0.75. */
  readonly decrease?: number | undefined;
  /** Share added back after a step under `lowWater x target` (0 < s <= 1). Default 0.05. */
  readonly increase?: number | undefined;
  /**
   * Hysteresis: the shedder gives capacity back only after a step below
   * `lowWater x target` (0 < lowWater < 1); between that and the target it
   * holds still. Default 0.8.
   */
  readonly lowWater?: number | undefined;
  /** `Retry-After` of a shed request. Default `'1s'`. */
  readonly retryAfter?: Duration | undefined;
  /** Clock (inject a fake one in tests). Default the system clock. */
  readonly clock?: Clock | undefined;
  /** Called after every control step. */
  readonly onStep?: ((step: ShedStep) => void) | undefined;
}

/** One control step. */
export interface ShedStep {
  readonly now: number;
  /** The driver's reading for the step. */
  readonly reading: number;
  /** The admitted level after the step, 0 to 2: `default` gets min(1, level), `sheddable` max(0, level - 1). */
  readonly level: number;
  /** -1 (shed more), 0 (hold) or +1 (shed less). */
  readonly direction: -1 | 0 | 1;
}

/** An admitted request: call `done()` once when its response is finished. */
export interface ShedTicket {
  done(): void;
}

/** The shedder's answer for one request. */
export type ShedAnswer = { readonly admitted: true; readonly ticket: ShedTicket } | { readonly admitted: false; readonly retryAfterMs: number };

/** What `stats()` reports. */
export interface ShedStats {
  readonly driver: string;
  readonly level: number;
  /** Share of each class admitted at the current level (before the in-flight cap). */
  readonly admittedShare: Readonly<Record<Criticality, number>>;
  readonly inFlight: number;
  readonly admitted: Readonly<Record<Criticality, number>>;
  readonly shed: Readonly<Record<Criticality, number>>;
}

/** A criticality-aware load shedder; see `createShedder`. */
export interface Shedder {
  /** Admits or sheds one request of class `criticality`. */
  admit(criticality: Criticality): ShedAnswer;
  stats(): ShedStats;
  /** Stops the driver (the event-loop histogram). */
  close(): void;
}

const OPTIONS = ['driver', 'target', 'maxInFlight', 'criticalReserve', 'interval', 'decrease', 'increase', 'lowWater', 'retryAfter', 'clock', 'onStep'];
/** Resolution of the event-loop delay histogram, ms. */
const LOOP_RESOLUTION_MS = 10;

function eventLoopDelayDriver(): ShedDriver {
  let h: IntervalHistogram | undefined;
  return {
    name: 'event-loop-delay',
    read() {
      if (h === undefined) {
        h = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
        h.enable();
        return 0;
      }
      // The histogram counts the timer's lateness in ns; percentile 0 of an empty histogram is 0.
      const ms = h.count === 0 ? 0 : h.percentile(99) / 1e6;
      h.reset();
      return ms;
    },
    close() {
      h?.disable();
    },
  };
}

function inFlightDriver(): ShedDriver {
  return { name: 'in-flight', read: (peak) => peak };
}

function fraction(v: unknown, option: string, min: number, max: number, minOpen: boolean, maxOpen: boolean, fallback: number): number {
  if (v === undefined) return fallback;
  const ok = typeof v === 'number' && Number.isFinite(v) && (minOpen ? v > min : v >= min) && (maxOpen ? v < max : v <= max);
  if (!ok) throw new ConfigError('RC_INVALID_OPTION', option, `must be a number ${minOpen ? '>' : '>='} ${min} and ${maxOpen ? '<' : '<='} ${max}, got ${typeof v === 'number' ? String(v) : typeof v}`);
  return v;
}

class AimdShedder implements Shedder {
  readonly #driver: ShedDriver;
  readonly #target: number;
  readonly #cap: number;
  readonly #nonCriticalCap: number;
  readonly #intervalMs: number;
  readonly #decrease: number;
  readonly #increase: number;
  readonly #lowWater: number;
  readonly #retryAfterMs: number;
  readonly #clock: Clock;
  readonly #onStep: ((step: ShedStep) => void) | undefined;
  #level = 2;
  #nextStep: number | undefined;
  #inFlight = 0;
  #peak = 0;
  /** Per class: credit for the admitted share, so a share of 0.3 admits 3 in 10 evenly (no randomness). */
  readonly #credit: Record<Criticality, number> = { critical: 1, default: 1, sheddable: 1 };
  readonly #admitted: Record<Criticality, number> = { critical: 0, default: 0, sheddable: 0 };
  readonly #shed: Record<Criticality, number> = { critical: 0, default: 0, sheddable: 0 };

  constructor(o: ShedderOptions) {
    if (o === null || typeof o !== 'object') throw new ConfigError('RC_INVALID_OPTION', 'shedder', 'createShedder needs an options object with a target');
    refuseUnknown(o, OPTIONS, 'shedder');
    const d = o.driver ?? SHEDDER_DEFAULTS.driver;
    if (d === 'in-flight') this.#driver = inFlightDriver();
    else if (d === 'event-loop-delay') this.#driver = eventLoopDelayDriver();
    else if (d !== null && typeof d === 'object' && typeof d.read === 'function' && typeof d.name === 'string') this.#driver = d;
    else throw new ConfigError('RC_INVALID_OPTION', 'shedder.driver', `must be 'in-flight', 'event-loop-delay' or a driver { name, read() }, got ${JSON.stringify(d)}`);
    if (typeof o.target !== 'number' || !Number.isFinite(o.target) || o.target <= 0) {
      throw new ConfigError('RC_INVALID_OPTION', 'shedder.target', `must be a positive number, got ${typeof o.target === 'number' ? String(o.target) : typeof o.target}`);
    }
    this.#target = o.target;
    const cap = o.maxInFlight ?? (this.#driver.name === 'in-flight' ? Math.ceil(o.target * SHEDDER_DEFAULTS.maxInFlightPerTarget) : Infinity);
    if (cap !== Infinity && (!Number.isSafeInteger(cap) || cap < 1)) throw new ConfigError('RC_INVALID_OPTION', 'shedder.maxInFlight', `must be a positive integer, got ${String(cap)}`);
    this.#cap = cap;
    const reserve = fraction(o.criticalReserve, 'shedder.criticalReserve', 0, 1, false, false, SHEDDER_DEFAULTS.criticalReserve);
    this.#nonCriticalCap = cap === Infinity ? Infinity : cap - Math.ceil(cap * reserve);
    this.#intervalMs = o.interval === undefined ? SHEDDER_DEFAULTS.intervalMs : parseDuration(o.interval, 'shedder.interval');
    this.#decrease = fraction(o.decrease, 'shedder.decrease', 0, 1, true, true, SHEDDER_DEFAULTS.decrease);
    this.#increase = fraction(o.increase, 'shedder.increase', 0, 1, true, false, SHEDDER_DEFAULTS.increase);
    this.#lowWater = fraction(o.lowWater, 'shedder.lowWater', 0, 1, true, true, SHEDDER_DEFAULTS.lowWater);
    this.#retryAfterMs = o.retryAfter === undefined ? SHEDDER_DEFAULTS.retryAfterMs : parseDuration(o.retryAfter, 'shedder.retryAfter');
    this.#clock = o.clock ?? systemClock;
    if (o.onStep !== undefined && typeof o.onStep !== 'function') throw new ConfigError('RC_INVALID_OPTION', 'shedder.onStep', 'must be a function');
    this.#onStep = o.onStep;
  }

  admit(criticality: Criticality): ShedAnswer {
    this.#tick();
    const c: Criticality = criticality === 'critical' || criticality === 'sheddable' ? criticality : 'default';
    if (!this.#fits(c)) {
      this.#shed[c]++;
      return { admitted: false, retryAfterMs: this.#retryAfterMs };
    }
    this.#admitted[c]++;
    this.#inFlight++;
    if (this.#inFlight > this.#peak) this.#peak = this.#inFlight;
    let open = true;
    return {
      admitted: true,
      ticket: {
        done: () => {
          if (!open) return;
          open = false;
          this.#inFlight--;
        },
      },
    };
  }

  /** The hard cap (with the critical reserve), then the class's share at the current level. */
  #fits(c: Criticality): boolean {
    if (c === 'critical') return this.#inFlight < this.#cap;
    if (this.#inFlight >= this.#nonCriticalCap) return false;
    const share = this.#share(c);
    const credit = Math.min(1, this.#credit[c] + share);
    if (credit >= 1) {
      this.#credit[c] = credit - 1;
      return true;
    }
    this.#credit[c] = credit;
    return false;
  }

  #share(c: Criticality): number {
    if (c === 'critical') return 1;
    return c === 'default' ? Math.min(1, this.#level) : Math.max(0, this.#level - 1);
  }

  /** Runs the control steps that are due (lazily, on the next request: no timer). */
  #tick(): void {
    const now = this.#clock.now();
    if (this.#nextStep === undefined) {
      this.#nextStep = now + this.#intervalMs;
      this.#driver.read(this.#peak); // starts the driver's measurement
      return;
    }
    if (now < this.#nextStep) return;
    // One step per due interval, at most a few: a long idle gap is one reading, not many.
    const reading = this.#driver.read(this.#peak);
    this.#peak = this.#inFlight;
    const before = this.#level;
    if (reading > this.#target) this.#level = this.#level * this.#decrease;
    else if (reading < this.#lowWater * this.#target) this.#level = Math.min(2, this.#level + this.#increase);
    if (this.#level < 1e-3) this.#level = 0;
    this.#nextStep = Math.max(this.#nextStep + this.#intervalMs, now);
    const direction = this.#level < before ? -1 : this.#level > before ? 1 : 0;
    this.#onStep?.({ now, reading, level: this.#level, direction });
  }

  stats(): ShedStats {
    return {
      driver: this.#driver.name,
      level: this.#level,
      admittedShare: { critical: 1, default: this.#share('default'), sheddable: this.#share('sheddable') },
      inFlight: this.#inFlight,
      admitted: { ...this.#admitted },
      shed: { ...this.#shed },
    };
  }

  close(): void {
    this.#driver.close?.();
  }
}

/**
 * A load shedder by criticality. Each control step (`interval`) it reads its
 * driver (requests in flight, or event-loop delay) and moves one admitted
 * level (0 to 2) by AIMD: multiplied by `decrease` after a step over
 * `target`, raised by `increase` after a step under `lowWater x target`,
 * held in between (hysteresis), so it steps slowly and does not flap.
 * `sheddable` requests get max(0, level - 1) of their share, `default`
 * min(1, level): sheddable traffic is shed entirely before any default
 * request is. Critical requests are never shed by the level, and have
 * `criticalReserve` of `maxInFlight` to themselves. A shed request is
 * answered 503 with `Retry-After` (`retryAfter`) by the HTTP adapters.
 */
export function createShedder(options: ShedderOptions): Shedder {
  return new AimdShedder(options);
}
