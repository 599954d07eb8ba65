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
  /** Position in the heap. */
  at: number;
}

/**
 * Space-saving with its counters in a binary min-heap by count, so that an
 * increment and a replacement cost O(log capacity), whatever the capacity.
 */
export class SpaceSaving {
  readonly capacity: number;
  readonly #byKey = new Map<string, Counter>();
  readonly #heap: Counter[] = [];
  /** Sum of every increment. */
  #total = 0;

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, got ${String(capacity)}`);
    this.capacity = capacity;
  }

  get total(): number {
    return this.#total;
  }

  /** Counts `by` (default 1) more for `key`. */
  add(key: string, by = 1): void {
    this.#total += by;
    const known = this.#byKey.get(key);
    if (known !== undefined) {
      known.count += by;
      this.#down(known.at);
      return;
    }
    const heap = this.#heap;
    if (heap.length < this.capacity) {
      const c: Counter = { key, count: by, error: 0, at: heap.length };
      heap.push(c);
      this.#byKey.set(key, c);
      this.#up(c.at);
      return;
    }
    // Replace the smallest counter: the new key inherits its count as error.
    const min = heap[0] as Counter;
    this.#byKey.delete(min.key);
    min.key = key;
    min.error = min.count;
    min.count += by;
    this.#byKey.set(key, min);
    this.#down(0);
  }

  #swap(i: number, j: number): void {
    const heap = this.#heap;
    const a = heap[i] as Counter;
    const b = heap[j] as Counter;
    heap[i] = b;
    heap[j] = a;
    b.at = i;
    a.at = j;
  }

  #up(i: number): void {
    const heap = this.#heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((heap[parent] as Counter).count <= (heap[i] as Counter).count) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const heap = this.#heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && (heap[l] as Counter).count < (heap[m] as Counter).count) m = l;
      if (r < heap.length && (heap[r] as Counter).count < (heap[m] as Counter).count) m = r;
      if (m === i) return;
      this.#swap(i, m);
      i = m;
    }
  }

  /** The `n` largest counters, largest first (ties by key, so the order is stable). */
  top(n: number): TopKey[] {
    return [...this.#heap]
      .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .slice(0, n)
      .map((c) => ({ key: c.key, count: c.count, error: c.error }));
  }
}
