/**
 * Counts over a sliding window, kept in ten slots (so a count leaves the
 * window within a tenth of the window after it is due). Memory is fixed.
 */
class WindowCounts {
  readonly #slotMs: number;
  readonly #slots: number[] = [];
  readonly #counts: number[][];

  constructor(windowMs: number, kinds: number) {
    this.#slotMs = Math.max(1, windowMs / 10);
    this.#counts = Array.from({ length: kinds }, () => new Array<number>(10).fill(0));
    for (let i = 0; i < 10; i++) this.#slots.push(-Infinity);
  }

  #roll(now: number): number {
    const slot = Math.floor(now / this.#slotMs);
    const i = ((slot % 10) + 10) % 10;
    if (this.#slots[i] !== slot) {
      this.#slots[i] = slot;
      for (const c of this.#counts) c[i] = 0;
    }
    return slot;
  }

  add(now: number, kind: number): void {
    const slot = this.#roll(now);
    const c = this.#counts[kind] as number[];
    const i = ((slot % 10) + 10) % 10;
    c[i] = (c[i] as number) + 1;
  }

  sum(now: number, kind: number): number {
    const slot = this.#roll(now);
    const c = this.#counts[kind] as number[];
    let s = 0;
    for (let i = 0; i < 10; i++) {
      const at = this.#slots[i] as number;
      if (at > slot - 10 && at <= slot) s += c[i] as number;
    }
    return s;
  }
}

/** Resolved retry budget options. */
export interface BudgetParams {
  readonly ratio: number;
  readonly minRetries: number;
  readonly windowMs: number;
}

/**
 * A retry budget per origin, in the spirit of Finagle's RetryBudget and gRPC
 * retry throttling: within the last `windowMs`, retries may be at most
 * `ratio` of first attempts plus `minRetries`. When an outage makes every
 * request fail, the fleet adds at most `ratio` more load instead of
 * multiplying it by `maxAttempts`.
 */
export class RetryBudget {
  readonly #p: BudgetParams;
  readonly #w: WindowCounts;

  constructor(p: BudgetParams) {
    this.#p = p;
    this.#w = new WindowCounts(p.windowMs, 2);
  }

  /** A first attempt was sent. */
  request(now: number): void {
    this.#w.add(now, 0);
  }

  /** Takes one retry from the budget; `false` (and nothing taken) when it is spent. */
  tryRetry(now: number): boolean {
    const allowed = this.#p.minRetries + this.#p.ratio * this.#w.sum(now, 0);
    if (this.#w.sum(now, 1) + 1 > allowed) return false;
    this.#w.add(now, 1);
    return true;
  }
}

/** Resolved adaptive throttling options. */
export interface ThrottleParams {
  readonly k: number;
  readonly windowMs: number;
}

/**
 * Client-side adaptive throttling (Google SRE book, "Handling Overload"):
 * over the last `windowMs`, `requests` attempts and `accepts` answers that
 * were not a rejection; each attempt is refused locally with probability
 * max(0, (requests - k * accepts) / (requests + 1)). Refused attempts count
 * as requests, so a backend that keeps rejecting sees less and less traffic,
 * and one that recovers is probed back into use.
 */
export class AdaptiveThrottle {
  readonly #p: ThrottleParams;
  readonly #w: WindowCounts;

  constructor(p: ThrottleParams) {
    this.#p = p;
    this.#w = new WindowCounts(p.windowMs, 2);
  }

  /** The probability that the next attempt is refused locally. */
  probability(now: number): number {
    const requests = this.#w.sum(now, 0);
    return Math.max(0, (requests - this.#p.k * this.#w.sum(now, 1)) / (requests + 1));
  }

  /** Counts an attempt and decides whether it may go out (`random()` in [0, 1)). */
  admit(now: number, random: () => number): boolean {
    const p = this.probability(now);
    this.#w.add(now, 0);
    return !(random() < p);
  }

  /** The server accepted an attempt. */
  accept(now: number): void {
    this.#w.add(now, 1);
  }
}
