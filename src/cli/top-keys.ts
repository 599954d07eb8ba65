/**
 * The heaviest keys of a stream in bounded memory: the space-saving
 * algorithm (Metwally, Agrawal and El Abbadi, 2005) with `capacity` counters.
 *
 * Bound, for a stream of `total` increments: every key seen more than
 * `total / capacity` times holds a counter, and a counter's `count`
 * overestimates its key's true count by at most its `error`, which is at most
 * `total / capacity`. `count - error` is a guaranteed lower bound. While no
 * more than `capacity` distinct keys have been seen, every count is exact
 * (`error` 0). Memory: `capacity` keys and two numbers each, whatever the
 * stream's length or number of distinct keys.
 */

/** One tracked key. */
export interface TopKey {
  readonly key: string;
  /** An upper bound of the key's count (exact when `error` is 0). */
  readonly count: number;
  /** How much of `count` may belong to keys this counter replaced. */
  readonly error: number;
}

interface Counter {
  key: string;
  count: number;
  error: number;
}

export class SpaceSaving {
  readonly capacity: number;
  readonly #counters = new Map<string, Counter>();
  /** Sum of every increment. */
  #total = 0;

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, got ${String(capacity)}`);
    this.capacity = capacity;
  }

  get total(): number {
    return this.#total;
  }

  /** Whether every count is exact: no counter has been replaced yet. */
  get exact(): boolean {
    for (const c of this.#counters.values()) if (c.error > 0) return false;
    return true;
  }

  /** Counts `by` (default 1) more for `key`. */
  add(key: string, by = 1): void {
    this.#total += by;
    const known = this.#counters.get(key);
    if (known !== undefined) {
      known.count += by;
      return;
    }
    if (this.#counters.size < this.capacity) {
      this.#counters.set(key, { key, count: by, error: 0 });
      return;
    }
    // Replace the smallest counter: the new key inherits its count as error.
    let min: Counter | undefined;
    for (const c of this.#counters.values()) if (min === undefined || c.count < min.count) min = c;
    const m = min as Counter;
    this.#counters.delete(m.key);
    this.#counters.set(key, { key, count: m.count + by, error: m.count });
  }

  /** The `n` largest counters, largest first (ties by key, so the order is stable). */
  top(n: number): TopKey[] {
    return [...this.#counters.values()]
      .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .slice(0, n)
      .map((c) => ({ key: c.key, count: c.count, error: c.error }));
  }
}
