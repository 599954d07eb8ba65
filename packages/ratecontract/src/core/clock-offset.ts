/**
 * Bounds the difference between the store's clock (Redis server time) and
 * the limiter's, from the decision times stores report: a call sent at `s`
 * and answered at `r` that the store decided at `d` says the offset lies
 * in `[d - r, d - s]`. The tightest bounds seen are kept, loosened by 100
 * ppm of the time since (clock rates drift), plus 1 ms. The pre-filter
 * (prefilter.ts) reads them to judge "the latest instant the store's clock
 * can show".
 */
export class ClockOffset {
  #hi = Infinity;
  #hiAt = 0;
  #lo = -Infinity;
  #loAt = 0;

  sample(sent: number, received: number, decidedAt: number): void {
    const hi = decidedAt - sent;
    const lo = decidedAt - received;
    if (hi <= this.high(sent)) {
      this.#hi = hi;
      this.#hiAt = sent;
    }
    if (lo >= this.low(received)) {
      this.#lo = lo;
      this.#loAt = received;
    }
  }

  /** An upper bound of (store clock - limiter clock) at limiter time `now`. */
  high(now: number): number {
    return this.#hi + Math.abs(now - this.#hiAt) / 10_000 + 1;
  }

  /** A lower bound of (store clock - limiter clock) at limiter time `now`. */
  low(now: number): number {
    return this.#lo - Math.abs(now - this.#loAt) / 10_000 - 1;
  }

  get known(): boolean {
    return this.#hi !== Infinity && this.#lo !== -Infinity;
  }
}
