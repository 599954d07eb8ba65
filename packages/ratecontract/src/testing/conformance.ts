import { ManualClock } from '../core/clock.js';
import { compileLimit } from '../core/compile.js';
import type { Store, StoreOp, StoreOpResult } from '../core/store.js';
import type { CompiledLimit } from '../core/types.js';
import { conformanceCases, type ConformanceCase, type ConformanceOp } from './cases.js';
import { ReferenceStore } from './reference-store.js';

/** Default start of the suite's manual clock: an ordinary epoch time, not aligned to any window. */
export const CONFORMANCE_START = 1_700_000_000_123;

/** How to get a store under test. */
export interface StoreConformanceOptions {
  /**
   * A fresh, empty store for one case; called once per case. For a shared
   * backend, give each store its own namespace (a Redis `prefix`). A Redis
   * store runs the suite in `timeMode: 'client'` (the suite drives time), with
   * a `ttlGraceMs` longer than the suite runs.
   */
  readonly createStore: () => Store | Promise<Store>;
  /** Called after each case with the store it used. */
  readonly disposeStore?: ((store: Store) => void | Promise<void>) | undefined;
  /** Start of the manual clock. Default `CONFORMANCE_START`. */
  readonly start?: number | undefined;
  /** Per-case timeout handed to `it`. Default 60 000 ms. */
  readonly timeoutMs?: number | undefined;
  /** The cases to run. Default: all of `conformanceCases`. */
  readonly cases?: readonly ConformanceCase[] | undefined;
}

/** The parts of a test framework the suite registers with (vitest, jest, node:test all fit). */
export interface TestHarness {
  readonly describe: (name: string, fn: () => void) => unknown;
  readonly it: (name: string, fn: () => Promise<void>, timeout?: number) => unknown;
}

/** A decision that differs from the reference. */
export class ConformanceError extends Error {
  readonly case: string;
  readonly step: number;

  constructor(caseName: string, step: number, message: string) {
    super(`${caseName}, step ${step}: ${message}`);
    this.name = 'ConformanceError';
    this.case = caseName;
    this.step = step;
  }
}

const FIELDS = ['allowed', 'consumed', 'remaining', 'resetMs', 'retryAfterMs', 'delayMs'] as const;

function describeOp(op: StoreOp): string {
  return `${op.spec.name} (${op.spec.algorithm}${op.spec.shadow ? ', shadow' : ''}${op.spec.countRejected ? ', countRejected' : ''}) key ${JSON.stringify(op.key.length > 24 ? op.key.slice(0, 24) + '...' : op.key)} cost ${op.cost}`;
}

function compare(name: string, step: number, now: number, ops: readonly StoreOp[], want: readonly StoreOpResult[], got: readonly StoreOpResult[]): void {
  if (!Array.isArray(got) || got.length !== want.length) {
    throw new ConformanceError(name, step, `expected ${want.length} results, got ${Array.isArray(got) ? got.length : typeof got}`);
  }
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as StoreOpResult;
    const g = got[i] as StoreOpResult;
    for (const f of FIELDS) {
      if (w[f] !== g[f]) {
        const show = (r: StoreOpResult): string => JSON.stringify(Object.fromEntries(FIELDS.map((k) => [k, r[k] === Infinity ? 'Infinity' : r[k]])));
        throw new ConformanceError(name, step, `at t=${now}, op ${i}, ${describeOp(ops[i] as StoreOp)}: ${f} differs\n  expected ${show(w)}\n  got      ${show(g)}`);
      }
    }
  }
}

/** The store ops of a step: each names a limit (and, for a limit with plans, the plan); concurrency ops get a lease id per step. */
function opsOf(caseName: string, s: number, limits: readonly CompiledLimit[], spec: readonly ConformanceOp[]): StoreOp[] {
  return spec.map(([li, key, cost, plan], j) => {
    const base = limits[li];
    if (base === undefined) throw new ConformanceError(caseName, s, `no limit at index ${li}`);
    const limit = plan === undefined ? base : base.plans?.get(plan);
    if (limit === undefined) throw new ConformanceError(caseName, s, `limit ${base.name} has no plan ${JSON.stringify(plan)}`);
    return { spec: limit, key, cost, leaseId: limit.algorithm === 'concurrency' ? `lease-${s}.${j}` : undefined };
  });
}

/**
 * Runs one case against `store`, step by step, and throws a
 * `ConformanceError` at the first decision that differs from the reference
 * (the pure algorithms under runChain).
 */
export async function runConformanceCase(c: ConformanceCase, store: Store, start = CONFORMANCE_START): Promise<void> {
  const limits: CompiledLimit[] = c.limits.map((d, i) => compileLimit(d, `limits[${i}]`, new Set()));
  const reference = new ReferenceStore();
  const clock = new ManualClock(start);
  const checks = new Map<number, { ops: StoreOp[]; results: StoreOpResult[]; now: number }>();
  let lastRetry = 0;
  for (let s = 0; s < c.steps.length; s++) {
    const step = c.steps[s];
    if (step === undefined) continue;
    if ('advance' in step) {
      clock.advance(step.advance);
    } else if ('advanceToRetry' in step) {
      if (lastRetry > 0 && Number.isFinite(lastRetry) && lastRetry + step.advanceToRetry >= 0) clock.advance(lastRetry + step.advanceToRetry);
    } else if ('peek' in step) {
      // A store without the optional peek has nothing to hold to it.
      if (store.peek === undefined) continue;
      const now = clock.now();
      const ops = opsOf(c.name, s, limits, step.peek);
      const want = reference.peekSync(ops, now);
      let got: readonly StoreOpResult[];
      try {
        got = await store.peek(ops, now);
      } catch (error) {
        throw new ConformanceError(c.name, s, `peek failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      compare(c.name, s, now, ops, want, got);
    } else if ('clear' in step) {
      if (store.clear === undefined) throw new ConformanceError(c.name, s, `the store has no clear(ops, now); this case needs it`);
      const ops = opsOf(c.name, s, limits, step.clear);
      await reference.clear(ops);
      await store.clear(ops, clock.now());
    } else if ('check' in step) {
      const now = clock.now();
      const ops = opsOf(c.name, s, limits, step.check);
      const want = reference.evaluateSync(ops, now);
      let got: readonly StoreOpResult[];
      try {
        got = await store.evaluate(ops, now);
      } catch (error) {
        throw new ConformanceError(c.name, s, `evaluate failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      compare(c.name, s, now, ops, want, got);
      checks.set(s, { ops, results: want, now });
      lastRetry = 0;
      ops.forEach((op, i) => {
        const r = want[i] as StoreOpResult;
        if (!r.allowed && !op.spec.shadow && r.retryAfterMs > lastRetry) lastRetry = r.retryAfterMs;
      });
      if (step.refund === true) {
        const give = ops.filter((op, i) => (want[i] as StoreOpResult).consumed && !op.spec.countRejected);
        if (give.length > 0) {
          await reference.refund(give, now);
          await store.refund(give, now);
        }
      }
    } else if ('settle' in step) {
      const taken = checks.get(step.settle);
      if (taken === undefined) continue;
      const give = taken.ops.filter((op, i) => (taken.results[i] as StoreOpResult).consumed && !op.spec.countRejected && op.spec.algorithm !== 'concurrency');
      // Once per check, as settle() is.
      checks.delete(step.settle);
      if (give.length > 0) {
        await reference.refund(give, taken.now);
        await store.refund(give, taken.now);
      }
    } else {
      const taken = checks.get(step.release);
      if (taken === undefined) continue;
      const now = clock.now();
      for (let i = 0; i < taken.ops.length; i++) {
        const op = taken.ops[i] as StoreOp;
        if (op.spec.algorithm !== 'concurrency' || !(taken.results[i] as StoreOpResult).consumed) continue;
        await reference.release(op);
        await store.release(op, now);
      }
    }
  }
}

/** Registers the suite with a test framework: one `describe`, one `it` per case. */
export function describeStoreConformance(name: string, options: StoreConformanceOptions, harness: TestHarness): void {
  harness.describe(`store conformance: ${name}`, () => {
    for (const c of options.cases ?? conformanceCases) {
      harness.it(
        c.name,
        async () => {
          const store = await options.createStore();
          try {
            await runConformanceCase(c, store, options.start);
          } finally {
            await options.disposeStore?.(store);
          }
        },
        options.timeoutMs ?? 60_000,
      );
    }
  });
}

/** The outcome of `runStoreConformance`. */
export interface ConformanceReport {
  readonly passed: readonly string[];
  readonly failed: ReadonlyArray<{ readonly case: string; readonly error: Error }>;
}

/** Runs every case without a test framework and reports; never throws for a failing case. */
export async function runStoreConformance(options: StoreConformanceOptions): Promise<ConformanceReport> {
  const passed: string[] = [];
  const failed: Array<{ case: string; error: Error }> = [];
  for (const c of options.cases ?? conformanceCases) {
    const store = await options.createStore();
    try {
      await runConformanceCase(c, store, options.start);
      passed.push(c.name);
    } catch (error) {
      failed.push({ case: c.name, error: error instanceof Error ? error : new Error(String(error)) });
    } finally {
      await options.disposeStore?.(store);
    }
  }
  return { passed, failed };
}
