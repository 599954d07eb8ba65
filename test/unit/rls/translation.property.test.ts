/**
 * The rls config is translated into library limit definitions and compiled
 * by the library's compiler. These properties hold that translation to what
 * the service answered before it: on random rule sets and random descriptor
 * traffic, it decides as the reference model of docs/rls.md
 * (reference-model.ts), and a file with one problem is refused with the
 * code PROBLEMS pins, naming the file, the rule's path and the line.
 *
 * Until commit 0ffc96e the old loader and engine (test/unit/rls/legacy)
 * ran beside them: the same decisions on every draw (1,500 rule sets with
 * up to 40 requests each under CI=true), the model agreeing with both, and
 * each problem's old code as PROBLEMS records it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock, memoryStore, type Store } from '../../../packages/ratecontract/src/index.js';
import { ConfigFileError } from '../../../packages/ratecontract/src/config/index.js';
import { parseRlsConfig } from '../../../packages/cli/src/rls/config.js';
import { RlsEngine } from '../../../packages/cli/src/rls/engine.js';
import { fcBudget } from '../../helpers/fc-budget.js';
import { oneProblemArb, PROBLEMS, rlsDocArb, trafficArb, type TrafficStep } from './rls-arbitraries.js';
import { ReferenceModel } from './reference-model.js';
import { stringify } from 'yaml';

interface Decider {
  decide(request: { domain: string; hitsAddend: number; descriptors: TrafficStep['descriptors'] }): unknown;
}

type Loaded = { readonly engine: Decider } | { readonly error: unknown };

function options(clock: ManualClock): { defaultStore: Store; localStore: Store; clock: ManualClock; responseHeaders: true } {
  return { defaultStore: memoryStore(), localStore: memoryStore(), clock, responseHeaders: true };
}

function load(text: string, clock: ManualClock): Loaded {
  try {
    return { engine: new RlsEngine(parseRlsConfig([{ file: 'x.yaml', text }]), options(clock)) };
  } catch (error) {
    return { error };
  }
}

async function answer(engine: Decider, step: TrafficStep): Promise<unknown> {
  try {
    return await engine.decide({ domain: step.domain, hitsAddend: step.hitsAddend, descriptors: step.descriptors });
  } catch (error) {
    return { thrown: (error as Error).name, message: (error as Error).message };
  }
}

const codeOf = (error: unknown): string => (error as { code?: string }).code ?? String(error);

describe('rls rules translated and compiled by the library', () => {
  it('on random rule sets and random descriptor traffic, the service answers as the reference model of docs/rls.md', async () => {
    let decided = 0;
    let over = 0;
    await fc.assert(
      fc.asyncProperty(rlsDocArb, trafficArb, async (doc, traffic) => {
        const text = stringify(doc);
        const clock = new ManualClock(1_700_000_000_000);
        const config = parseRlsConfig([{ file: 'x.yaml', text }]);
        const engine = new RlsEngine(config, options(clock));
        const model = new ReferenceModel(config, doc);
        for (const step of traffic) {
          clock.advance(step.dt);
          const expected = model.decide(step, clock.now());
          const got = (await answer(engine, step)) as { overallCode?: string; statuses?: unknown; message?: string };
          expect(got.message === undefined ? { overallCode: got.overallCode, statuses: got.statuses } : { thrown: got.message }).toEqual(expected);
          decided++;
          if ('overallCode' in expected && expected.overallCode === 'OVER_LIMIT') over++;
        }
      }),
      fcBudget({ runs: 200, ms: 8000 }),
    );
    expect(decided).toBeGreaterThan(200);
    expect(over).toBeGreaterThan(20);
  });

  it('refuses a file with one problem with its pinned code, naming the file, the path and the line', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(oneProblemArb, ({ text, problem }) => {
        const clock = new ManualClock(0);
        const after = load(text, clock);
        if (!('error' in after)) throw new Error(`${problem.label}: accepted`);
        seen.add(problem.label);
        expect(codeOf(after.error)).toBe(problem.now);
        expect(after.error).toBeInstanceOf(ConfigFileError);
        const e = after.error as ConfigFileError;
        expect(e.file).toBe('x.yaml');
        expect(e.option).toMatch(new RegExp(`^descriptors\\[\\d+\\](\\.descriptors\\[\\d+\\])*\\.rate_limit\\.${problem.key}$`));
        expect(e.message).toMatch(/^x\.yaml: \S+: .* \(line \d+, column \d+\)$/);
        // The line is the offending clause's, or (a clause the rule lacks) the rule's own.
        const line = text.split('\n')[(e.line ?? 0) - 1] ?? '';
        if (problem.key !== 'acknowledgeFailOpen') expect(line).toContain(`${problem.key}:`);
        else expect(e.line).toBeGreaterThan(0);
      }),
      fcBudget({ runs: 400, ms: 5000 }),
    );
    expect([...seen].sort()).toEqual(PROBLEMS.map((p) => p.label).sort());
  });
});
