import fc, { type Parameters } from 'fast-check';
import {
  concurrency,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingLog,
  slidingWindow,
  tokenBucket,
  type Algorithm,
  type AlgorithmParams,
  type AlgorithmResult,
} from '../../packages/ratecontract/src/index.js';
import { FULL_BUDGETS } from './tier.js';

/** Every algorithm, leaky-bucket in both modes: `[label, algorithm, queue]`. */
export const ALGORITHM_CASES: ReadonlyArray<readonly [string, Algorithm<unknown>, boolean]> = [
  ['fixed-window', fixedWindow, false],
  ['sliding-log', slidingLog, false],
  ['sliding-window', slidingWindow, false],
  ['token-bucket', tokenBucket, false],
  ['gcra', gcra, false],
  ['leaky-bucket (meter)', leakyBucket, false],
  ['leaky-bucket (queue)', leakyBucket, true],
  ['concurrency', concurrency, false],
];

/** Options of `fcBudget`. */
export interface BudgetOptions {
  /** Runs in the everyday suite (`npm test`); `npm run test:full` runs 5x as many. Default 200. */
  readonly runs?: number;
  /** Wall-clock budget in ms in the everyday suite; the full one gets 3x. Default 3000. */
  readonly ms?: number;
  /**
   * Fewest runs an interrupted property may pass on. Default 20 (or `runs`
   * if lower): a run starved to a handful of cases proved nothing and fails.
   */
  readonly minRuns?: number;
}

/**
 * fast-check settings with a time budget: `numRuns` is the target, and
 * `interruptAfterTimeLimit` stops a slow property early, so the algorithm
 * suite stays within ~60 s in `npm test` and ~120 s in `npm run test:full`
 * (`RC_TEST_TIER=full`, tier.ts: 5x the runs, 3x the time) on two cores. An
 * interrupted property passes on the runs it did, if it did at least
 * `minRuns` (a plugin fails it otherwise, so a starved run cannot pass on
 * nothing); the properties that must meet a case (rejections, releases,
 * expiries) also count them and assert a minimum. `FC_SEED` (and optionally
 * `FC_PATH`) replays a reported counterexample.
 */
export function fcBudget<T = unknown>(options: BudgetOptions = {}): Parameters<T> {
  const runs = options.runs ?? 200;
  const ms = options.ms ?? 3000;
  const minRuns = Math.min(options.minRuns ?? 20, runs);
  const seed = process.env.FC_SEED;
  const path = process.env.FC_PATH;
  const starvation: fc.Plugin<T> = () => ({
    onAllRunsComplete: (details) => {
      if (process.env.FC_LOG_RUNS === '1') console.log(`FC_RUNS ${details.numRuns} interrupted=${String(details.interrupted)}`);
      // A failure is reported as usual; only a passing run that did too few cases is turned into a failure.
      if (!details.failed && details.numRuns < minRuns) {
        throw new Error(`property starved: ${details.numRuns} runs within its ${FULL_BUDGETS ? ms * 3 : ms} ms budget, fewer than the ${minRuns} it needs to mean anything`);
      }
    },
  });
  return {
    numRuns: FULL_BUDGETS ? runs * 5 : runs,
    interruptAfterTimeLimit: FULL_BUDGETS ? ms * 3 : ms,
    markInterruptAsFailure: false,
    plugins: [starvation],
    ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}),
    ...(path !== undefined && path !== '' ? { path } : {}),
  };
}

// ---------------------------------------------------------------------------
// Traffic for the algorithm properties: small N/W/B so the properties hit the
// edges (window boundaries, exact refill instants, cost = capacity), plus a
// driver that runs one pure algorithm over a request sequence.
// ---------------------------------------------------------------------------

/** How the clock moves before a request: by `dt`, to the last rejection's retry instant, or to (just before) the next aligned window boundary. */
export type Jump = 'dt' | 'retry' | 'edge' | 'edge-1';

/** One request of a generated sequence. */
export interface Step {
  readonly jump: Jump;
  readonly dt: number;
  readonly cost: number;
}

/** A generated workload for one algorithm. */
export interface Traffic {
  readonly p: AlgorithmParams;
  readonly start: number;
  readonly steps: readonly Step[];
  /** Carry the rejected result's normalised state forward instead of the prior state (both must be equivalent). */
  readonly keepNormalised: boolean;
}

/** One decision of a driven sequence. */
export interface Decided<S> {
  readonly now: number;
  readonly cost: number;
  readonly leaseId: string;
  /** The state the decision was made on. */
  readonly before: S | undefined;
  readonly result: AlgorithmResult<S>;
}

/** Start instants: the epoch, arbitrary, and a realistic wall-clock time. */
export const startArb: fc.Arbitrary<number> = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 ** 40 }), fc.constant(1_700_000_000_000));

/** Small parameters. `burst: false` pins B = N, as for algorithms without a burst option. */
export function paramsArb(options: { readonly burst: boolean; readonly queue?: boolean }): fc.Arbitrary<AlgorithmParams> {
  const queue = options.queue ?? false;
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 8 }),
      windowMs: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constantFrom(7, 60, 1000, 60_000)),
      burst: fc.integer({ min: 1, max: 10 }),
    })
    .map(({ limit, windowMs, burst }) => ({ limit, windowMs, burst: options.burst ? burst : limit, queue }));
}

/** Large parameters at the edge of the documented range: limit*window and burst*window up to 2^49. */
export function largeParamsArb(options: { readonly burst: boolean; readonly queue?: boolean }): fc.Arbitrary<AlgorithmParams> {
  const queue = options.queue ?? false;
  return fc.integer({ min: 1, max: 2 ** 29 }).chain((windowMs) => {
    const most = Math.max(1, Math.min(2 ** 20, Math.floor(2 ** 49 / windowMs)));
    return fc
      .record({ limit: fc.integer({ min: 1, max: most }), burst: fc.integer({ min: 1, max: most }) })
      .map(({ limit, burst }) => ({ limit, windowMs, burst: options.burst ? burst : limit, queue }));
  });
}

/** One day in ms. */
const DAY_MS = 86_400_000;

/**
 * Quota-sized parameters, beyond the exact range (`max(N, B) * W > 2^49`):
 * limits up to 10^12 (and 2^40), windows up to 366 days, the published
 * shapes (10^7 per day, 10^9 per 30 days, 10^12 bytes per 30 days) and random
 * ones. `burst: false` pins B = N. `log: true` keeps sliding-log's memory
 * budget: at most 100,000 log entries (`min(N, W)`), so either N or W is
 * at most 100,000. Every value is accepted by `compileLimit`.
 */
export function quotaParamsArb(options: { readonly burst: boolean; readonly queue?: boolean; readonly log?: boolean }): fc.Arbitrary<AlgorithmParams> {
  const queue = options.queue ?? false;
  const window = fc.oneof(
    fc.constantFrom(DAY_MS, 30 * DAY_MS, 366 * DAY_MS, 2 ** 35),
    fc.integer({ min: 1_000, max: 366 * DAY_MS }),
  );
  const limit = fc.oneof(
    fc.constantFrom(10_000_000, 1_000_000_000, 1_000_000_000_000, 2 ** 40, 65_537),
    fc.integer({ min: 1, max: 1_000_000_000_000 }),
  );
  const base = options.log === true
    ? fc.oneof(
        // Few entries because the limit is small: N <= 100,000, with a window long enough to leave the exact range.
        fc.integer({ min: 1, max: 100_000 }).chain((n) =>
          fc.integer({ min: Math.min(2 ** 35, Math.floor(2 ** 49 / n) + 1), max: 2 ** 35 }).map((w) => ({ limit: n, windowMs: w })),
        ),
        // Few entries because the window is short: W <= 100,000 ms, with a limit large enough to leave the exact range.
        fc.integer({ min: 5_630, max: 100_000 }).chain((w) =>
          fc.integer({ min: Math.floor(2 ** 49 / w) + 1, max: 2 ** 40 }).map((n) => ({ limit: n, windowMs: w })),
        ),
      )
    : fc.record({ limit, windowMs: window });
  return base
    .chain(({ limit: n, windowMs }) =>
      fc.record({
        limit: fc.constant(n),
        windowMs: fc.constant(windowMs),
        // Up to twice the limit (and 2^40): B * ceil(W / N) stays far inside the buckets' range.
        burst: options.burst ? fc.oneof(fc.constant(n), fc.integer({ min: 1, max: Math.min(2 ** 40, 2 * n) })) : fc.constant(n),
      }),
    )
    .filter((p) => Math.max(p.limit, p.burst) * p.windowMs > 2 ** 49)
    .map(({ limit: n, windowMs, burst }) => ({ limit: n, windowMs, burst, queue }));
}

/**
 * (prev, elapsed, W) where `Math.floor(prev * elapsed / W)` in doubles is one
 * too high (the product passes 2^53 and rounds up): a sliding window that
 * computed its weighted count that way would admit one unit too many.
 */
export const ADVERSARIAL_SLIDING: ReadonlyArray<readonly [number, number, number]> = [
  [815_292_228_053, 13_721_140_350, 16_180_328_993],
  [422_548_700_674, 5_798_398_381, 5_962_061_077],
  [1_000_345_883_418, 9_542_024_580, 11_696_695_737],
  [779_623_798_458, 25_665_116_028, 34_204_521_281],
  [556_730_815_266, 9_824_346_494, 28_256_368_200],
  [525_192_990_889, 1_635_335_246, 1_695_936_608],
];

/** Requests against `p`: costs from 0 (peek) to capacity + 1 (never fits), biased to 1. */
export function stepsArb(p: AlgorithmParams, capacity: number, maxLength = 60): fc.Arbitrary<Step[]> {
  const W = p.windowMs;
  const step = fc.record({
    jump: fc.oneof(
      { weight: 6, arbitrary: fc.constant<Jump>('dt') },
      { weight: 2, arbitrary: fc.constant<Jump>('retry') },
      { weight: 1, arbitrary: fc.constantFrom<Jump>('edge', 'edge-1') },
    ),
    dt: fc.oneof(
      { weight: 3, arbitrary: fc.constant(0) },
      // About one emission interval W/N: lands next to refill instants.
      { weight: 2, arbitrary: fc.integer({ min: 0, max: Math.min(Math.ceil(W / p.limit) + 1, 2 ** 30) }) },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: Math.min(W, 2 ** 30) }) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: Math.min(3 * W, 2 ** 31) }) },
    ),
    cost: fc.oneof(
      { weight: 5, arbitrary: fc.constant(1) },
      { weight: 4, arbitrary: fc.integer({ min: 0, max: capacity }) },
      { weight: 1, arbitrary: fc.constant(capacity + 1) },
    ),
  });
  return fc.array(step, { minLength: 1, maxLength, size: 'max' });
}

/** A workload for `algo` with parameters from `params`. */
export function trafficArb<S>(algo: Algorithm<S>, params: fc.Arbitrary<AlgorithmParams>, maxLength = 60): fc.Arbitrary<Traffic> {
  return params.chain((p) =>
    fc.record({
      p: fc.constant(p),
      start: startArb,
      steps: stepsArb(p, algo.capacity(p), maxLength),
      keepNormalised: fc.boolean(),
    }),
  );
}

/** Freezes a state deeply, so an algorithm that mutated its input would throw. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** The next instant the clock moves to for `step`. Never goes backwards. */
export function advance(now: number, step: Step, W: number, lastRetry: number): number {
  switch (step.jump) {
    case 'retry':
      return Number.isFinite(lastRetry) && lastRetry > 0 ? now + lastRetry : now + step.dt;
    case 'edge':
      return Math.floor(now / W) * W + W;
    case 'edge-1': {
      const edge = Math.floor(now / W) * W + W - 1;
      return edge >= now ? edge : edge + W;
    }
    default:
      return now + step.dt;
  }
}

/**
 * Runs `algo` over a workload with the store's semantics: the state is
 * replaced only when a request is admitted with cost > 0; a rejection or a
 * peek leaves it (or, with `keepNormalised`, replaces it by the equivalent
 * normalised state the algorithm returned).
 */
export function drive<S>(algo: Algorithm<S>, traffic: Traffic): Decided<S>[] {
  const { p, steps } = traffic;
  let now = traffic.start;
  let state: S | undefined;
  let lastRetry = 0;
  const out: Decided<S>[] = [];
  steps.forEach((step, i) => {
    now = advance(now, step, p.windowMs, lastRetry);
    const leaseId = `lease-${i}`;
    const before = deepFreeze(state);
    const result = algo.decide(before, now, step.cost, p, leaseId);
    out.push({ now, cost: step.cost, leaseId, before, result });
    lastRetry = result.retryAfterMs;
    if (result.allowed && step.cost > 0) state = result.state;
    else if (traffic.keepNormalised) state = result.state;
  });
  return out;
}
