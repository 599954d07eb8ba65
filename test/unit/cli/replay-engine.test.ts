import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ContractDiff, ContractRun } from '../../../packages/cli/src/cli/replay.js';
import type { LogRecord } from '../../../packages/cli/src/cli/logs.js';
import { parseConfig } from '../../../packages/ratecontract/src/config/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';
import { T0 } from './replay-helpers.js';

/**
 * The replay engine against a reference written from the contract's
 * definitions alone: sliding-log limits admit a request while fewer than N
 * admitted requests of the same key lie in (t - W, t]; a chain admits when
 * every limit that has a key admits, and a refused request consumes nothing.
 */

const contract = (ipLimit: number): string => `limits:
  - { name: per-user, purpose: abuse, algorithm: sliding-log, limit: 2, window: 30s, key: principal, reason: r }
  - { name: per-ip, purpose: abuse, algorithm: sliding-log, limit: ${ipLimit}, window: 60s, key: ip, reason: r }
routes:
  - { match: GET /a, limits: [per-user, per-ip] }
  - { match: GET /b, limits: [per-ip] }
  - { match: GET /free, limits: [] }
`;

interface Step {
  readonly gap: number;
  readonly ip: number;
  readonly user: number | undefined;
  readonly path: '/a' | '/b' | '/free' | '/none';
}

const step = fc.record({
  gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2000 }), fc.integer({ min: 0, max: 2000 }), fc.integer({ min: 0, max: 40_000 })),
  ip: fc.integer({ min: 0, max: 3 }),
  user: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  path: fc.constantFrom('/a' as const, '/b' as const, '/free' as const, '/none' as const),
});

function records(steps: readonly Step[]): LogRecord[] {
  let t = T0;
  return steps.map((s, i) => {
    t += s.gap;
    return { line: i + 1, time: t, method: 'GET', path: s.path, query: '', ip: `192.0.2.${s.ip}`, ...(s.user !== undefined && { principal: `u${s.user}` }) };
  });
}

interface Expected {
  wouldReject: Map<string, number>;
  checked: Map<string, number>;
  unkeyed: Map<string, number>;
  byKey: Map<string, Map<string, number>>;
  rejected: number;
  /** Per request: whether some limit refused it. */
  refused: boolean[];
}

function reference(recs: readonly LogRecord[], ipLimit: number): Expected {
  const limits = { 'per-user': { n: 2, w: 30_000 }, 'per-ip': { n: ipLimit, w: 60_000 } } as const;
  const admitted = new Map<string, number[]>();
  const e: Expected = { wouldReject: new Map(), checked: new Map(), unkeyed: new Map(), byKey: new Map(), rejected: 0, refused: [] };
  const inc = (m: Map<string, number>, k: string): void => void m.set(k, (m.get(k) ?? 0) + 1);
  for (const r of recs) {
    const chain = r.path === '/a' ? (['per-user', 'per-ip'] as const) : r.path === '/b' ? (['per-ip'] as const) : [];
    const verdicts: Array<{ limit: keyof typeof limits; key: string; ok: boolean }> = [];
    for (const name of chain) {
      const key = name === 'per-user' ? r.principal : r.ip;
      if (key === undefined) {
        inc(e.unkeyed, name);
        continue;
      }
      inc(e.checked, name);
      const { n, w } = limits[name];
      const live = (admitted.get(`${name}|${key}`) ?? []).filter((a) => a > r.time - w).length;
      verdicts.push({ limit: name, key, ok: live < n });
    }
    const ok = verdicts.every((v) => v.ok);
    e.refused.push(!ok);
    if (ok) {
      for (const v of verdicts) admitted.set(`${v.limit}|${v.key}`, [...(admitted.get(`${v.limit}|${v.key}`) ?? []), r.time]);
    } else {
      e.rejected++;
      for (const v of verdicts.filter((x) => !x.ok)) {
        inc(e.wouldReject, v.limit);
        const m = e.byKey.get(v.limit) ?? new Map<string, number>();
        inc(m, v.key);
        e.byKey.set(v.limit, m);
      }
    }
  }
  return e;
}

async function replay(recs: readonly LogRecord[], ipLimit: number): Promise<{ run: ContractRun; verdicts: boolean[] }> {
  const run = await ContractRun.start(parseConfig(contract(ipLimit), { file: `c${ipLimit}.yaml` }), { capacity: 100, keepUnrouted: 10 });
  const verdicts: boolean[] = [];
  try {
    for (const r of recs) verdicts.push((await run.replay(r)).wouldReject);
  } finally {
    await run.close();
  }
  return { run, verdicts };
}

describe('replay engine', () => {
  it('agrees with the reference on random logs: per limit, per key, and in total', async () => {
    let tripped = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 120, size: 'max' }), async (steps) => {
        const recs = records(steps);
        const e = reference(recs, 3);
        const { run, verdicts } = await replay(recs, 3);
        expect(verdicts).toEqual(e.refused);
        for (const name of ['per-user', 'per-ip']) {
          const t = run.tallies.get(name);
          expect(t?.checked ?? -1, name).toBe(e.checked.get(name) ?? 0);
          expect(t?.unkeyed ?? -1, name).toBe(e.unkeyed.get(name) ?? 0);
          expect(t?.wouldReject ?? -1, name).toBe(e.wouldReject.get(name) ?? 0);
          const keys = new Map((t?.top.top(100) ?? []).map((k) => [k.key, k.count]));
          expect(keys, name).toEqual(e.byKey.get(name) ?? new Map());
          if ((t?.wouldReject ?? 0) > 0) tripped++;
        }
        expect(run.totals.rejected).toBe(e.rejected);
        expect(run.totals.unrouted).toBe(recs.filter((r) => r.path === '/none').length);
        expect(run.totals.unlimited).toBe(recs.filter((r) => r.path === '/free').length);
      }),
      fcBudget({ runs: 150 }),
    );
    expect(tripped, 'limits that tripped, over the runs').toBeGreaterThan(50);
  });

  it('--against: the difference is the requests one contract refuses and the other admits, request by request', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 120, size: 'max' }), async (steps) => {
        const recs = records(steps);
        const tight = await ContractRun.start(parseConfig(contract(2), { file: 'tight.yaml' }), { capacity: 100, keepUnrouted: 10 });
        const loose = await ContractRun.start(parseConfig(contract(4), { file: 'loose.yaml' }), { capacity: 100, keepUnrouted: 10 });
        const diff = new ContractDiff(100);
        for (const r of recs) diff.add(await tight.replay(r), await loose.replay(r));
        await tight.close();
        await loose.close();
        const a = reference(recs, 2).refused;
        const b = reference(recs, 4).refused;
        expect(diff.newlyRejected).toBe(a.filter((x, i) => x && !b[i]).length);
        expect(diff.noLongerRejected).toBe(a.filter((x, i) => !x && b[i]).length);
        expect([...diff.newlyByLimit.values()].reduce((s, x) => s + x, 0)).toBe(diff.newlyRejected);
      }),
      fcBudget({ runs: 100 }),
    );
  });
});
