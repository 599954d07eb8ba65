// A request trace with the shape of the one Cloudflare measured its
// two-counter sliding window on ("How we built rate limiting capable of
// scaling to millions of domains", 2017: 400 million requests from 270,000
// distinct sources): many sources, heavy-tailed rates, bursty arrivals.
//
// Each source gets a rate from a Pareto distribution (shape `alpha`, most
// sources slow, a few far above any limit), capped at `maxRate`. A share
// `burstyShare` of the sources send in on/off bursts (exponential on and
// off periods, the same mean rate, `burstFactor` times faster while on);
// the rest are Poisson. Deterministic: one seeded PRNG (mulberry32) per
// source, so a source's arrivals do not depend on how many others there are.
//
// The trace is produced source by source, each in time order: a limit keyed
// by source decides each source on its own, so the global interleaving does
// not change any decision, and nothing but one source's arrivals is ever in
// memory (10 million requests take no array of 10 million).

/** mulberry32: a small seeded PRNG with a 2^32 period. */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The defaults: Cloudflare's 270,000 sources, about 10.5 million requests over an hour. */
export const CLOUDFLARE_SHAPE = Object.freeze({
  sources: 270_000,
  durationMs: 3_600_000,
  // Pareto: P(rate > x) = (minRate / x)^alpha. alpha 1.2: the heaviest 1% of sources send about half the requests.
  alpha: 1.2,
  minRatePerMin: 0.12,
  maxRatePerMin: 6_000,
  burstyShare: 0.4,
  burstFactor: 5,
  meanOnMs: 15_000,
  seed: 27,
});

/** The rate (requests per ms) of source `i` and whether it is bursty. */
export function sourceProfile(i, shape = CLOUDFLARE_SHAPE) {
  const rnd = mulberry32((shape.seed * 1_000_003 + i * 7_919) >>> 0);
  const u = 1 - rnd();
  const perMin = Math.min(shape.maxRatePerMin, shape.minRatePerMin * u ** (-1 / shape.alpha));
  return { rate: perMin / 60_000, bursty: rnd() < shape.burstyShare, rnd };
}

/**
 * Calls `emit(t)` for every request of source `i`, in time order (integer ms,
 * several requests may share one); returns how many.
 */
export function sourceArrivals(i, emit, shape = CLOUDFLARE_SHAPE) {
  const { rate, bursty, rnd } = sourceProfile(i, shape);
  const exp = (mean) => -Math.log(1 - rnd()) * mean;
  const end = shape.durationMs;
  let n = 0;
  if (!bursty) {
    for (let t = exp(1 / rate); t < end; t += exp(1 / rate)) {
      emit(Math.floor(t));
      n++;
    }
    return n;
  }
  // On/off: on for exp(meanOn), off for exp(meanOn * (factor - 1)), so the
  // source is on 1/factor of the time, at factor x its mean rate.
  const onRate = rate * shape.burstFactor;
  const meanOff = shape.meanOnMs * (shape.burstFactor - 1);
  let t = exp(meanOff) * rnd();
  while (t < end) {
    const stop = Math.min(end, t + exp(shape.meanOnMs));
    for (let a = t + exp(1 / onRate); a < stop; a += exp(1 / onRate)) {
      emit(Math.floor(a));
      n++;
    }
    t = stop + exp(meanOff);
  }
  return n;
}

/** Runs every source: `perSource(i, arrivals)` with the source's arrival times (a reused array; copy to keep). */
export function forEachSource(perSource, shape = CLOUDFLARE_SHAPE) {
  const times = [];
  const push = (t) => times.push(t);
  let total = 0;
  for (let i = 0; i < shape.sources; i++) {
    times.length = 0;
    total += sourceArrivals(i, push, shape);
    perSource(i, times);
  }
  return total;
}
