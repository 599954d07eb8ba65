/**
 * The rls config is translated into library limit definitions and compiled
 * by the library's compiler. These properties hold that translation to the
 * loader it replaced: for random rule sets and random descriptor traffic,
 * both decide exactly alike, and both refuse the same files with the same
 * codes. test/unit/rls/legacy/ is that loader and engine as they were
 * before the change (main at a3406ee), kept only for this comparison.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock, memoryStore, type Store } from '../../../packages/ratecontract/src/index.js';
import { ConfigFileError } from '../../../packages/ratecontract/src/config/index.js';
import { parseRlsConfig } from '../../../packages/cli/src/rls/config.js';
import { RlsEngine } from '../../../packages/cli/src/rls/engine.js';
import { parseRlsConfig as legacyParse } from './legacy/config.js';
import { RlsEngine as LegacyEngine } from './legacy/engine.js';
import { fcBudget } from '../../helpers/fc-budget.js';
import { oneProblemArb, PROBLEMS, rlsDocArb, rlsFileArb, trafficArb, type TrafficStep } from './rls-arbitraries.js';
import { ReferenceModel } from './reference-model.js';
import { stringify } from 'yaml';

interface Decider {
  decide(request: { domain: string; hitsAddend: number; descriptors: TrafficStep['descriptors'] }): unknown;
}

type Loaded = { readonly engine: Decider } | { readonly error: unknown };

function options(clock: ManualClock): { store: Store; localStore: Store; clock: ManualClock; responseHeaders: true } {
  return { store: memoryStore(), localStore: memoryStore(), clock, responseHeaders: true };
}

function loadNew(text: string, clock: ManualClock): Loaded {
  try {
    return { engine: new RlsEngine(parseRlsConfig([{ file: 'x.yaml', text }]), options(clock)) };
  } catch (error) {
    return { error };
  }
}

/** The old path: its loader, then its engine, which compiled each rule into a limiter (and could refuse it only there). */
function loadOld(text: string, clock: ManualClock): Loaded {
  try {
    return { engine: new LegacyEngine(legacyParse([{ file: 'x.yaml', text }]), options(clock)) };
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

describe('rls rules translated and compiled by the library decide as the old loader did', () => {
  it('on random rule sets and random descriptor traffic, every response is the same', async () => {
    let decided = 0;
    let over = 0;
    await fc.assert(
      fc.asyncProperty(rlsFileArb, trafficArb, async (text, traffic) => {
        const clock = new ManualClock(1_700_000_000_000);
        const before = loadOld(text, clock);
        const after = loadNew(text, clock);
        if ('error' in before) {
          // A valid draw the old path refused only in its engine (none expected): the new one refuses it at load, with the same code.
          expect('error' in after ? codeOf(after.error) : 'accepted').toBe(codeOf(before.error));
          return;
        }
        if ('error' in after) throw after.error;
        for (const step of traffic) {
          clock.advance(step.dt);
          const a = await answer(before.engine, step);
          const b = await answer(after.engine, step);
          expect(b).toEqual(a);
          decided++;
          if (JSON.stringify(a).includes('OVER_LIMIT')) over++;
        }
      }),
      fcBudget({ runs: 300, ms: 8000 }),
    );
    // The traffic must reach both answers, or the comparison proved little.
    expect(decided).toBeGreaterThan(200);
    expect(over).toBeGreaterThan(20);
  });

  it('on random rule sets and random descriptor traffic, the service answers as the reference model of docs/rls.md', async () => {
    let decided = 0;
    let over = 0;
    await fc.assert(
      fc.asyncProperty(rlsDocArb, trafficArb, async (doc, traffic) => {
        const text = stringify(doc);
        const clock = new ManualClock(1_700_000_000_000);
        const config = parseRlsConfig([{ file: 'x.yaml', text }]);
        const engines = [new RlsEngine(config, options(clock)), new LegacyEngine(legacyParse([{ file: 'x.yaml', text }]), options(clock))];
        const model = new ReferenceModel(config, doc);
        for (const step of traffic) {
          clock.advance(step.dt);
          const expected = model.decide(step, clock.now());
          for (const engine of engines) {
            const got = (await answer(engine, step)) as { overallCode?: string; statuses?: unknown; message?: string };
            expect(got.message === undefined ? { overallCode: got.overallCode, statuses: got.statuses } : { thrown: got.message }).toEqual(expected);
          }
          decided++;
          if ('overallCode' in expected && expected.overallCode === 'OVER_LIMIT') over++;
        }
      }),
      fcBudget({ runs: 200, ms: 8000 }),
    );
    expect(decided).toBeGreaterThan(200);
    expect(over).toBeGreaterThan(20);
  });

  it('refuses a file with one problem as the old loader did (codes renamed only where docs/errors.md says), naming the file, the path and the line', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(oneProblemArb, ({ text, problem }) => {
        const clock = new ManualClock(0);
        const before = loadOld(text, clock);
        const after = loadNew(text, clock);
        if (!('error' in before) || !('error' in after)) throw new Error(`${problem.label}: accepted (old: ${String('engine' in before)}, new: ${String('engine' in after)})`);
        seen.add(problem.label);
        expect(codeOf(before.error)).toBe(problem.old);
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
