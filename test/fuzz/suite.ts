/**
 * The bounded fuzz run of one target, as the full suite runs it: every
 * corpus file and seed, then generated and mutated inputs for a fixed time
 * budget, then each dictionary token repeated to a long input. Each input
 * must pass `check` (harness.ts); the heap after a full collection may grow
 * by at most `HEAP_BOUND_BYTES` over the whole run.
 *
 * Budgets: `FUZZ_BUDGET_MS` (default 3000 per target: 60% generated, 40%
 * mutated seeds and corpus) scales the run; `FC_SEED` replays a reported
 * failure. The on-demand, coverage-guided run is `npm run fuzz` (run.ts).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readCorpus } from './corpus.js';
import { check, formatFinding, type FuzzTarget } from './harness.js';
import { mutatedArb } from './mutate.js';

/** Time budget of one target's generated and mutated inputs, ms. */
export const BUDGET_MS = Number(process.env.FUZZ_BUDGET_MS ?? 3000);
/** Most the heap may grow over one target's run, after a full collection. */
export const HEAP_BOUND_BYTES = 64 * 1024 * 1024;
/** Length of the repeated-token inputs, characters. */
const LONG_CHARS = 64 * 1024;

declare const gc: (() => void) | undefined;

function heapAfterGc(): number {
  if (typeof gc === 'function') gc();
  return process.memoryUsage().heapUsed;
}

/** Runs `arb` through `check` for up to `ms`, failing on the first finding (shrunk); returns how many inputs ran. */
async function fuzzFor(target: FuzzTarget, arb: fc.Arbitrary<string>, ms: number): Promise<number> {
  let runs = 0;
  const seed = process.env.FC_SEED;
  await fc.assert(
    fc.asyncProperty(arb, async (input) => {
      runs++;
      const finding = await check(target, input);
      if (finding !== undefined) throw new Error(formatFinding(target, input, finding));
    }),
    { numRuns: 10_000_000, interruptAfterTimeLimit: ms, markInterruptAsFailure: false, ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}) },
  );
  return runs;
}

/**
 * Registers the bounded fuzz tests of `target`. `minRuns` is the fewest
 * generated inputs that count as a run (a starved run fails rather than
 * passing on nothing); `long: false` skips the repeated-token inputs (for the
 * YAML documents, where 64 KiB legitimately takes longer than the bound).
 */
export function fuzzSuite(target: FuzzTarget, options: { readonly minRuns: number; readonly long?: boolean }): void {
  let heapBefore = 0;
  beforeAll(() => {
    heapBefore = heapAfterGc();
  });
  afterAll(() => {
    const growth = heapAfterGc() - heapBefore;
    expect(growth, `heap grew by ${(growth / 2 ** 20).toFixed(1)} MiB over the ${target.name} run`).toBeLessThan(HEAP_BOUND_BYTES);
  });

  it(`${target.name}: every corpus file and seed ends in a result or its typed error`, async () => {
    const inputs = [...readCorpus(target.name).map((e) => [e.file, e.text] as const), ...target.seeds().map((s, i) => [`seed ${i}`, s] as const)];
    expect(inputs.length).toBeGreaterThan(0);
    const failures: string[] = [];
    for (const [where, input] of inputs) {
      const finding = await check(target, input);
      if (finding !== undefined) failures.push(`${where}: ${formatFinding(target, input, finding)}`);
    }
    expect(failures).toEqual([]);
  });

  it(`${target.name}: generated near-valid inputs`, async () => {
    const runs = await fuzzFor(target, target.arbitrary, BUDGET_MS * 0.6);
    expect(runs, `only ${runs} inputs ran in ${BUDGET_MS * 0.6} ms`).toBeGreaterThanOrEqual(options.minRuns);
  });

  it(`${target.name}: mutated seeds and corpus`, async () => {
    const pool = [...target.seeds(), ...readCorpus(target.name).map((e) => e.text)];
    const runs = await fuzzFor(target, mutatedArb(pool, target.dictionary), BUDGET_MS * 0.4);
    expect(runs, `only ${runs} inputs ran in ${BUDGET_MS * 0.4} ms`).toBeGreaterThanOrEqual(Math.ceil(options.minRuns / 2));
  });

  if (options.long !== false) {
    it(`${target.name}: each dictionary token repeated to 64 KiB stays within 5x the bound`, async () => {
      const long: FuzzTarget = { ...target, maxMs: 5 * (target.maxMs ?? 50) };
      const failures: string[] = [];
      for (const token of target.dictionary) {
        const input = token.repeat(Math.ceil(LONG_CHARS / token.length)).slice(0, LONG_CHARS);
        const finding = await check(long, input);
        if (finding !== undefined) failures.push(formatFinding(long, input, finding));
      }
      expect(failures).toEqual([]);
    });
  }
}
