/** A source of time in integer milliseconds. Inject a fake one in tests; never sleep. */
export interface Clock {
  /** The current time in milliseconds since the epoch (or any fixed origin). */
  now(): number;
}

/** The system clock (`Date.now()`). */
export const systemClock: Clock = { now: () => Date.now() };

/** A manual clock for tests and simulations: time moves only when told to. */
export class ManualClock implements Clock {
  #now: number;

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  /** Moves time forward by `ms` (which may be 0). */
  advance(ms: number): void {
    this.#now += ms;
  }

  /** Sets the absolute time. */
  set(ms: number): void {
    this.#now = ms;
  }
}
