/** The generated traffic patterns of `ratecontract simulate`. */
export type PatternName = 'boundary' | 'steady' | 'bursty' | 'poisson';

/** Every pattern name, in the order the usage lists them. */
export const PATTERNS: readonly PatternName[] = ['boundary', 'steady', 'bursty', 'poisson'];

/** Requests a pattern offers per window, as a multiple of the limit N (boundary: 2N every other window). */
export const OFFERED_PER_WINDOW: Readonly<Record<PatternName, number>> = { boundary: 1, steady: 1.5, bursty: 2, poisson: 1.5 };

/**
 * A seeded generator of uniform numbers in [0, 1): xorshift32 over a seed
 * mixed by one multiply-xorshift round, so that nearby seeds give unrelated
 * streams and seed 0 works. Deterministic on every platform (32-bit integer
 * operations only).
 */
export function random(seed: number): () => number {
  let x = Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) >>> 0;
  x ^= x >>> 13;
  if (x === 0) x = 0x6d2b79f5;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

/**
 * Arrival times (integer ms, ascending) of a pattern for one key, over
 * `windows` windows of `windowMs`.
 *
 * - `boundary`: N requests in the last second before a window boundary and N
 *   in the first second after it, at every other boundary (the attack on
 *   fixed windows). For windows under 4 s the slice is a quarter window.
 * - `steady`: 1.5 N per window, evenly spaced.
 * - `bursty`: 2 N in a slice of 1% of each window, at a point drawn from `seed`.
 * - `poisson`: a Poisson process with a mean of 1.5 N per window (independent
 *   exponential gaps drawn from `seed`); arrivals in the same ms share it.
 */
export function arrivals(pattern: PatternName, limit: number, windowMs: number, windows: number, seed = 1): number[] {
  const out: number[] = [];
  const horizon = windows * windowMs;
  if (pattern === 'boundary') {
    const slice = Math.max(1, Math.min(1000, Math.floor(windowMs / 4)));
    for (let k = 1; k <= windows; k += 2) {
      const edge = k * windowMs;
      for (let i = 0; i < limit; i++) out.push(edge - slice + Math.floor((i * slice) / limit));
      for (let i = 0; i < limit; i++) out.push(edge + Math.floor((i * slice) / limit));
    }
  } else if (pattern === 'steady') {
    const total = Math.floor(1.5 * limit * windows);
    for (let i = 0; i < total; i++) out.push(Math.floor((i * horizon) / total));
  } else if (pattern === 'bursty') {
    const next = random(seed);
    const width = Math.max(1, Math.ceil(windowMs / 100));
    for (let k = 0; k < windows; k++) {
      const start = k * windowMs + Math.floor(next() * Math.max(1, windowMs - width));
      for (let i = 0; i < 2 * limit; i++) out.push(start + Math.floor((i * width) / (2 * limit)));
    }
  } else {
    const next = random(seed);
    const perMs = (1.5 * limit) / windowMs;
    let t = 0;
    for (;;) {
      t += -Math.log(1 - next()) / perMs;
      if (t >= horizon) break;
      out.push(Math.floor(t));
    }
  }
  return out.sort((a, b) => a - b);
}
