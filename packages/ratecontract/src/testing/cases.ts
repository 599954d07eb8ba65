import type { AlgorithmName } from '../algorithms/types.js';
import type { LimitDefinition } from '../core/types.js';

/**
 * One op of a check: index of the limit in the case's `limits`, the (raw)
 * key, the cost, and (for a limit with `plans`) the plan it is decided under.
 */
export type ConformanceOp = readonly [limit: number, key: string, cost: number, plan?: string];

/** One step of a conformance script. Time only moves when a step says so. */
export type ConformanceStep =
  /** Moves the clock forward by `advance` ms. */
  | { readonly advance: number }
  /**
   * Moves the clock to the previous check's retry instant plus `offset` (so
   * -1 must still be rejected and 0 admitted); a no-op if that check was
   * admitted or can never be admitted.
   */
  | { readonly advanceToRetry: number }
  /** Evaluates one chain; with `refund`, then gives back what it consumed (as the limiter does when another store rejects). */
  | { readonly check: readonly ConformanceOp[]; readonly refund?: boolean }
  /** Releases the leases taken by the check at step index `release`. */
  | { readonly release: number }
  /**
   * Gives back, now, what the check at step index `settle` consumed, at that
   * check's own instant (as `decision.settle('success')` does on a
   * `count: 'failures'` limit): a key whose state has since expired or rolled
   * over must be left as it is, and no state may go below fresh.
   */
  | { readonly settle: number }
  /** Asks the store what a check of these ops would answer now (`Store.peek`): the same answer as the reference, and nothing may change. */
  | { readonly peek: readonly ConformanceOp[] }
  /** Forgets the state of each op's key under its limit (`Store.clear`, what `limiter.reset` calls). */
  | { readonly clear: readonly ConformanceOp[] };

/** A named script over a chain of limits. */
export interface ConformanceCase {
  readonly name: string;
  readonly limits: readonly LimitDefinition[];
  readonly steps: readonly ConformanceStep[];
}

/** A small deterministic PRNG (mulberry32): the scripts are fixed, not random per run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(rnd: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rnd() * xs.length)] as T;
}

function def(name: string, algorithm: AlgorithmName, limit: number, window: number, extra: Partial<LimitDefinition> = {}): LimitDefinition {
  return { name, purpose: 'shedding', algorithm, limit, window, key: 'global', ...extra };
}

/** Capacity of one request under a definition (burst for bucket algorithms, limit otherwise). */
function capacityOf(d: LimitDefinition): number {
  return d.burst ?? d.limit;
}

interface RandomShape {
  readonly seed: number;
  readonly count: number;
  readonly limits: readonly LimitDefinition[];
  readonly keys: readonly string[];
  readonly windowMs: number;
}

/** A fixed pseudo-random script: checks of the whole chain with mixed costs and keys, time steps, refunds and releases. */
function randomSteps(shape: RandomShape, firstIndex: number): ConformanceStep[] {
  const rnd = prng(shape.seed);
  const W = shape.windowMs;
  const maxCap = Math.max(...shape.limits.map(capacityOf));
  const costs = [0, 1, 1, 1, 1, 2, 3, maxCap + 1];
  const advances = [0, 0, 1, 3, 17, Math.floor(W / 4), Math.floor(W / 2), W - 1, W, 2 * W + 5];
  const steps: ConformanceStep[] = [];
  const checks: number[] = [];
  for (let s = 0; s < shape.count; s++) {
    const r = rnd();
    if (r < 0.3) {
      steps.push({ advance: pick(rnd, advances) });
    } else if (r < 0.37) {
      steps.push({ advanceToRetry: rnd() < 0.5 ? -1 : 0 });
    } else if (r < 0.42 && checks.length > 0) {
      steps.push({ release: pick(rnd, checks) });
    } else {
      const cost = pick(rnd, costs);
      const ops = shape.limits.map((_, i): ConformanceOp => [i, pick(rnd, shape.keys), rnd() < 0.9 ? cost : pick(rnd, costs)]);
      checks.push(firstIndex + steps.length);
      steps.push({ check: ops, refund: rnd() < 0.12 });
    }
  }
  return steps;
}

/** One limit per windowed algorithm, limit 3 per second (as `count: 'failures'` limits see them: concurrency has no settle). */
const SETTLE_CHAIN: readonly LimitDefinition[] = (['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra'] as const).map((a) =>
  def(`settle-${a}`, a, 3, 1000),
);

/** Each limit alone, so a rejection elsewhere never stops a consume: check, settle late, settle twice, settle after expiry. */
function settleSteps(): ConformanceStep[] {
  const steps: ConformanceStep[] = [];
  SETTLE_CHAIN.forEach((_, li) => {
    const at = (): number => steps.length;
    const one = (key = 'a', cost = 1): ConformanceStep => ({ check: [[li, key, cost]] });
    const first = at();
    steps.push(one(), { advance: 100 }, one(), { advance: 100 });
    const third = at();
    steps.push(one(), one(), { settle: first }, { settle: first }, one(), one(), { advance: 50 }, { settle: third }, one(), one());
    // A check, then the key expires (or its window rolls over) before the settle arrives.
    const stale = at();
    steps.push({ advance: 3000 }, one('b', 2));
    steps.push({ advance: 2500 }, one('b'), { settle: stale + 1 }, one('b'), one('b'), one('b'), one('b'));
    steps.push({ advance: 5000 });
  });
  return steps;
}

/** A hand-written opening for a one-limit case: exhaust, exact retry, cost > 1, a cost that never fits, refund, release. */
function opening(d: LimitDefinition): ConformanceStep[] {
  const cap = capacityOf(d);
  const one = (cost: number, key = 'a'): ConformanceStep => ({ check: [[0, key, cost]] });
  const steps: ConformanceStep[] = [one(0)];
  for (let i = 0; i <= cap; i++) steps.push(one(1));
  steps.push(one(0), { advanceToRetry: -1 }, one(1), { advanceToRetry: 0 }, one(1), one(1));
  steps.push(one(cap + 1), one(cap + 1, 'b'));
  steps.push({ advance: 1 }, one(2), one(2), { advanceToRetry: -1 }, one(2), { advanceToRetry: 0 }, one(2));
  steps.push({ advance: 3 }, { check: [[0, 'a', 1]], refund: true }, one(1), one(cap, 'b'), one(1, 'b'));
  steps.push({ release: 1 }, { release: 2 }, one(1), { advance: 5000 }, one(cap), one(1));
  return steps;
}

const ALGORITHM_LIMITS: readonly LimitDefinition[] = [
  def('fixed', 'fixed-window', 5, 1000),
  def('sliding-window', 'sliding-window', 5, 1000),
  def('sliding-log', 'sliding-log', 4, 1000),
  def('token-bucket', 'token-bucket', 3, 1000, { burst: 5 }),
  def('leaky-meter', 'leaky-bucket', 3, 1000, { burst: 4 }),
  def('leaky-queue', 'leaky-bucket', 2, 1000, { burst: 3, mode: 'queue' }),
  def('gcra', 'gcra', 3, 997, { burst: 4 }),
  def('concurrency', 'concurrency', 3, 1000),
];

function oneLimitCase(d: LimitDefinition, seed: number): ConformanceCase {
  const open = opening(d);
  return {
    name: `${d.name}${d.mode === 'queue' ? ' (queue mode)' : ''}: exhaust, exact retry, cost > 1, never fits, refund, release, random`,
    limits: [d],
    steps: [...open, ...randomSteps({ seed, count: 160, limits: [d], keys: ['a', 'b'], windowMs: 1000 }, open.length)],
  };
}

const CHAIN: readonly LimitDefinition[] = [
  def('c-concurrency', 'concurrency', 4, 3000),
  def('c-log', 'sliding-log', 6, 2000),
  def('c-gcra', 'gcra', 5, 1000, { burst: 3 }),
  def('c-token', 'token-bucket', 4, 1500, { burst: 6, countRejected: true }),
  def('c-sliding', 'sliding-window', 8, 2000, { shadow: true }),
  def('c-leaky', 'leaky-bucket', 4, 1000, { burst: 5, mode: 'queue' }),
  def('c-fixed', 'fixed-window', 10, 5000, { shadow: true, countRejected: true }),
];

const SHADOW_CHAIN: readonly LimitDefinition[] = [
  def('s-tight', 'gcra', 2, 1000),
  def('s-shadow', 'fixed-window', 1, 1000, { shadow: true }),
  def('s-count', 'sliding-log', 3, 1000, { countRejected: true }),
  def('s-both', 'token-bucket', 2, 1000, { shadow: true, countRejected: true }),
];

function shadowSteps(): ConformanceStep[] {
  const all = (cost: number): ConformanceStep => ({ check: [[0, 'k', cost], [1, 'k', cost], [2, 'k', cost], [3, 'k', cost]] });
  const steps: ConformanceStep[] = [all(1), all(1), all(1), all(1), all(1), { advanceToRetry: -1 }, all(1), { advanceToRetry: 0 }];
  steps.push({ check: [[0, 'k', 1], [1, 'k', 1], [2, 'k', 1], [3, 'k', 1]], refund: true });
  steps.push({ check: [[0, 'k', 3], [1, 'k', 0], [2, 'k', 1], [3, 'k', 1]] });
  return [...steps, ...randomSteps({ seed: 11, count: 120, limits: SHADOW_CHAIN, keys: ['k', 'j'], windowMs: 1000 }, steps.length)];
}

/** Every check of `steps` preceded by a peek of the same ops (and a second one after, every third check). */
function withPeeks(steps: readonly ConformanceStep[]): ConformanceStep[] {
  const out: ConformanceStep[] = [];
  const index = new Map<number, number>();
  let checks = 0;
  steps.forEach((step, i) => {
    if ('check' in step) {
      out.push({ peek: step.check });
      index.set(i, out.length);
      out.push(step);
      if (checks++ % 3 === 0) out.push({ peek: step.check });
      return;
    }
    // Releases and settles name a check by its step index, which moved.
    if ('release' in step) out.push({ release: index.get(step.release) ?? -1 });
    else if ('settle' in step) out.push({ settle: index.get(step.settle) ?? -1 });
    else out.push(step);
  });
  return out;
}

/** Per limit: two keys used up, one cleared (it starts over, the other does not), a clear of a key never seen, a clear after expiry. */
function clearSteps(limits: readonly LimitDefinition[]): ConformanceStep[] {
  const steps: ConformanceStep[] = [];
  limits.forEach((d, li) => {
    const cap = capacityOf(d);
    const one = (key: string, cost = 1): ConformanceStep => ({ check: [[li, key, cost]] });
    steps.push(one('a', cap), one('b', cap), one('a'), one('b'), { clear: [[li, 'a', 1]] }, one('a'), one('b'), one('a', cap - 1), one('a'));
    steps.push({ clear: [[li, 'never-seen', 1]] }, one('never-seen'), { advance: 2500 }, { clear: [[li, 'b', 1]] }, one('b', cap), { advance: 3000 });
  });
  return steps;
}

/** Limits with plans: per algorithm, a plan with its own limit, one with a burst, and one with another window (its own state). */
const PLAN_LIMITS: readonly LimitDefinition[] = (['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'] as const).map((a) => {
  const buckets = a === 'token-bucket' || a === 'leaky-bucket' || a === 'gcra';
  return def(`plan-${a}`, a, 2, 1000, { plan: 'header.x-plan', plans: { free: {}, pro: buckets ? { limit: 5, burst: 7 } : { limit: 5 }, slow: { limit: 3, window: 3000 } } });
});

/** Keys on every plan in one chain, then keys that change plan, so each plan's figures and what carries over are compared. */
function planSteps(): ConformanceStep[] {
  const PLANS = ['free', 'pro', 'slow'];
  const rnd = prng(41);
  const steps: ConformanceStep[] = [];
  for (let s = 0; s < 220; s++) {
    const r = rnd();
    if (r < 0.25) steps.push({ advance: pick(rnd, [0, 1, 50, 333, 999, 1000, 2500]) });
    else if (r < 0.3) steps.push({ advanceToRetry: rnd() < 0.5 ? -1 : 0 });
    else {
      const cost = pick(rnd, [0, 1, 1, 1, 2, 8]);
      if (rnd() < 0.5) {
        // Keys 'a' and 'b' keep one plan each, two plans of every limit in one chain.
        steps.push({ check: PLAN_LIMITS.flatMap((_, li): ConformanceOp[] => [[li, 'a', cost, 'free'], [li, 'b', cost, 'pro']]) });
      } else {
        // Key 'c' changes plan from check to check, one limit per chain: a chain another limit rejects would be
        // compensated, and a bucket normalised under one plan's rate drains differently under the next one's.
        steps.push({ check: [[Math.floor(rnd() * PLAN_LIMITS.length), 'c', cost, pick(rnd, PLANS)]] });
      }
    }
  }
  return steps;
}

const ODD_KEYS = ['', 'user@example.com', '203.0.113.7', '2001:db8::/64', 'ключ', 'a\u0000b', 'x'.repeat(200), '{tag}', 'rc:*'];

/**
 * The fixed conformance script: every algorithm alone (leaky bucket in both
 * modes), a seven-limit chain of every algorithm with shadow and
 * countRejected limits, a chain where shadow and counting limits disagree,
 * and keys that must stay apart whatever bytes they hold.
 */
export const conformanceCases: readonly ConformanceCase[] = [
  ...ALGORITHM_LIMITS.map((d, i) => oneLimitCase(d, 101 + i)),
  {
    name: 'chain of every algorithm with shadow and countRejected limits, refunds and releases',
    limits: CHAIN,
    steps: randomSteps({ seed: 7, count: 260, limits: CHAIN, keys: ['u1', 'u2'], windowMs: 1000 }, 0),
  },
  {
    name: 'shadow limits never block; countRejected limits consume when they admit',
    limits: SHADOW_CHAIN,
    steps: shadowSteps(),
  },
  {
    name: 'a settled success is given back later, at its own instant; a stale one changes nothing',
    limits: SETTLE_CHAIN,
    steps: settleSteps(),
  },
  {
    name: 'peek answers what a check would answer at the same instant, and changes nothing',
    limits: CHAIN,
    steps: withPeeks(randomSteps({ seed: 17, count: 160, limits: CHAIN, keys: ['u1', 'u2'], windowMs: 1000 }, 0)),
  },
  ...ALGORITHM_LIMITS.map((d): ConformanceCase => ({
    name: `peek, ${d.name}${d.mode === 'queue' ? ' (queue mode)' : ''}: every check's figures announced by a peek before it`,
    limits: [d],
    steps: withPeeks(opening(d)),
  })),
  {
    name: 'clear forgets one key of one limit and nothing else',
    limits: ALGORITHM_LIMITS,
    steps: clearSteps(ALGORITHM_LIMITS),
  },
  {
    name: 'plans: each plan decides with its own figures; a key that changes plan keeps the state its plan shares',
    limits: PLAN_LIMITS,
    steps: planSteps(),
  },
  {
    name: 'keys of any bytes stay apart',
    limits: [def('k-fixed', 'fixed-window', 2, 1000), def('k-conc', 'concurrency', 2, 1000)],
    steps: [
      ...ODD_KEYS.flatMap((k): ConformanceStep[] => [{ check: [[0, k, 1], [1, k, 1]] }, { check: [[0, k, 2], [1, k, 1]] }]),
      ...ODD_KEYS.map((k): ConformanceStep => ({ check: [[0, k, 1], [1, k, 1]] })),
      { release: 0 },
      { advance: 1000 },
      ...ODD_KEYS.map((k): ConformanceStep => ({ check: [[0, k, 2], [1, k, 2]] })),
    ],
  },
];
