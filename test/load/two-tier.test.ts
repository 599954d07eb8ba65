/**
 * Two-tier limits (`tier`), proved on a fleet: four processes (pinned to
 * CPU 0) share one real redis-server (pinned to CPU 1), every process built
 * with `replicas: 4`.
 *
 * - far below their limits, allotment mode needs at least 10x fewer Redis
 *   round trips per decision than the plain (batched) Redis store, counted
 *   from `INFO commandstats`;
 * - driven above their limits, the fleet's admissions stay within the
 *   bound of every supported algorithm, also when one process is SIGKILLed
 *   mid-run;
 * - under a single-source flood, the pre-filter saves the store calls of
 *   the rejections and admits what the plain store admits.
 *
 * Each worker writes every admission synchronously as it happens, with the
 * instants its check started and ended; the decision was made in between.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { algorithms } from '../../packages/ratecontract/src/algorithms/registry.js';
import type { TierDefinition } from '../../packages/ratecontract/src/index.js';
import type { LimitSpec, Spec } from './fixtures/tier-spec.js';
import { redisCli, startRedis, type RedisServer } from '../integration/redis/helpers/redis-server.js';
import { pinnedArgv } from '../helpers/pinned.js';

const WORKER = fileURLToPath(new URL('./fixtures/tier-worker.ts', import.meta.url));
const PINNED = availableParallelism() >= 2;
const K = 4;

interface Report {
  readonly start: number;
  readonly end: number;
  readonly decisions: number;
  readonly allowed: number;
  readonly maxLatencyMs: number;
  readonly outcomes: Record<string, number>;
  readonly rejectedBy: readonly number[];
}

interface Admission {
  readonly limit: number;
  readonly key: number;
  readonly t0: number;
  readonly t1: number;
  readonly outcome: string;
}

const children = new Set<ChildProcess>();
let redis: RedisServer | undefined;
let runs = 0;

beforeAll(async () => {
  redis = await startRedis([], undefined, PINNED ? { cpu: 1 } : {});
}, 60_000);

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await redis?.stop();
}, 30_000);

function port(): number {
  if (redis === undefined) throw new Error('redis-server did not start');
  return redis.port;
}

/** Script calls Redis has served so far (EVALSHA, EVAL and FCALL, read-only variants included). */
async function scriptCalls(): Promise<number> {
  const info = await redisCli(port(), 'INFO', 'commandstats');
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval|evalsha_ro|eval_ro|fcall|fcall_ro):calls=(\d+)/gm)) calls += Number(m[2]);
  return calls;
}

/**
 * Runs `processes` workers on `spec` from a common start instant; with `kill`, SIGKILLs worker `kill.index`
 * `kill.afterMs` after the start. Resolves with each worker's report (undefined for the killed one) and every
 * admission any worker recorded.
 */
async function fleet(spec: Spec, processes: number, kill?: { index: number; afterMs: number }): Promise<Fleet> {
  const before = await scriptCalls();
  const startAt = Date.now() + 4000;
  const prefix = `tier${runs++}:`;
  const admissions: Admission[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  const done = Array.from({ length: processes }, (_, i) => {
    const argv = ['--import', 'tsx', WORKER, JSON.stringify({ ...spec, port: port(), prefix, startAt })];
    const [command, ...rest] = pinnedArgv(PINNED ? 0 : undefined, process.execPath, argv);
    const child = spawn(command, rest);
    children.add(child);
    let buffer = '';
    let last = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      buffer += d.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('A ')) {
          const [, limit, key, t0, t1, outcome] = line.split(' ');
          admissions.push({ limit: Number(limit), key: Number(key), t0: Number(t0), t1: Number(t1), outcome: outcome ?? '' });
        } else if (line.startsWith('S ')) {
          starts[i] = Number(line.slice(2));
          armKill();
        }
        else if (line !== '') last = line;
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const budget = setTimeout(() => child.kill('SIGKILL'), 60_000);
    let killer: NodeJS.Timeout | undefined;
    let killedAt: number | undefined;
    const armKill = (): void => {
      if (kill?.index !== i) return;
      killer = setTimeout(() => {
        killedAt = Date.now();
        child.kill('SIGKILL');
      }, kill.afterMs);
    };
    return new Promise<Report | undefined>((resolve, reject) => {
      child.once('exit', (code, signal) => {
        clearTimeout(budget);
        if (killer !== undefined) clearTimeout(killer);
        children.delete(child);
        if (kill?.index === i && signal === 'SIGKILL') {
          // Killed: it ran from its start to the kill.
          if (killedAt !== undefined) ends[i] = killedAt;
          return resolve(undefined);
        }
        if (code !== 0 || last === '') reject(new Error(`tier worker exited with ${String(code ?? signal)}: ${err.slice(-2000)}`));
        else resolve(JSON.parse(last) as Report);
      });
    });
  });
  const reports = await Promise.all(done);
  reports.forEach((r, i) => {
    if (r !== undefined) ends[i] = r.end;
  });
  console.log(`fleet outcomes: ${JSON.stringify(reports.map((r) => r && { ...r.outcomes, maxLatencyMs: r.maxLatencyMs }))}`);
  // Every process was running (and, but for a killed one, demanding) from the last start to the first end.
  return { reports, admissions, from: Math.max(...starts), to: Math.min(...ends), calls: (await scriptCalls()) - before };
}

interface Fleet {
  readonly reports: Array<Report | undefined>;
  readonly admissions: Admission[];
  readonly from: number;
  readonly to: number;
  readonly calls: number;
}

function decisions(reports: ReadonlyArray<Report | undefined>): number {
  return reports.reduce((sum, r) => sum + (r?.decisions ?? 0), 0);
}

const paramsOf = (l: LimitSpec) => ({ limit: l.limit, windowMs: l.windowMs, burst: l.burst ?? l.limit, queue: false });

/**
 * The bound of `l` over the admissions of one key. A decision lies between its check's start and end, so an
 * admission is in window w for sure when both are; per aligned window the sure ones are at most N. In any
 * interval, the admissions whose checks started in it were decided within it plus the longest check: at most
 * the algorithm's bound over that longer interval. Returns the per-window counts (sure, sure + unsure).
 */
function checkBound(l: LimitSpec, times: Admission[]): Map<number, [number, number]> {
  const p = paramsOf(l);
  const algo = algorithms[l.algorithm];
  const W = l.windowMs;
  const perWindow = new Map<number, [number, number]>();
  for (const a of times) {
    const w0 = Math.floor(a.t0 / W);
    const w1 = Math.floor(a.t1 / W);
    for (let w = w0; w <= w1; w++) {
      const c = perWindow.get(w) ?? [0, 0];
      if (w0 === w1) c[0]++;
      c[1]++;
      perWindow.set(w, c);
    }
  }
  if (l.algorithm === 'fixed-window' || l.algorithm === 'sliding-window') {
    for (const [w, [sure]] of perWindow) expect(sure, `window ${w}: ${sure} admitted, limit ${l.limit}`).toBeLessThanOrEqual(l.limit);
  }
  const starts = times.map((a) => a.t0).sort((a, b) => a - b);
  const slack = Math.max(0, ...times.map((a) => a.t1 - a.t0));
  for (const span of [1, 50, W, 4 * W]) {
    let j = 0;
    for (let i = 0; i < starts.length; i++) {
      while ((starts[i] as number) - (starts[j] as number) >= span) j++;
      expect(i - j + 1, `${i - j + 1} checks that started within ${span} ms admitted`).toBeLessThanOrEqual(algo.bound(p, span + slack + 1));
    }
  }
  return perWindow;
}

function byKey(admissions: readonly Admission[], limit: number): Map<number, Admission[]> {
  const out = new Map<number, Admission[]>();
  for (const a of admissions) {
    if (a.limit !== limit) continue;
    const list = out.get(a.key) ?? [];
    list.push(a);
    out.set(a.key, list);
  }
  return out;
}

describe('two-tier allotment mode on a fleet of four processes and one redis-server', () => {
  it('far below their limits: at least 10x fewer Redis round trips per decision than the plain Redis store', async () => {
    const limits = (tier?: TierDefinition): LimitSpec[] => [
      { algorithm: 'fixed-window', limit: 1_000_000, windowMs: 60_000, ...(tier !== undefined ? { tier } : {}) },
      { algorithm: 'gcra', limit: 1_000_000, windowMs: 60_000, ...(tier !== undefined ? { tier } : {}) },
    ];
    const spec = { keys: 20, inflight: 16, checks: 20_000, record: false };
    const plain = await fleet({ ...spec, limits: limits() }, K);
    const allotment = await fleet({ ...spec, limits: limits({ mode: 'allotment' }) }, K);
    const plainPer = plain.calls / decisions(plain.reports);
    const allotmentPer = allotment.calls / decisions(allotment.reports);
    console.log(`round trips per decision: plain ${plainPer.toFixed(4)} (${plain.calls} script calls), allotment ${allotmentPer.toFixed(5)} (${allotment.calls}), ${(plainPer / allotmentPer).toFixed(1)}x fewer`);
    expect(decisions(allotment.reports)).toBe(K * spec.checks);
    expect(allotment.reports.every((r) => r?.allowed === spec.checks)).toBe(true);
    expect(plainPer / allotmentPer).toBeGreaterThanOrEqual(10);
  }, 90_000);

  const above: LimitSpec[] = [
    { algorithm: 'fixed-window', limit: 100, windowMs: 500, tier: { mode: 'allotment' } },
    { algorithm: 'sliding-window', limit: 100, windowMs: 500, tier: { mode: 'allotment' } },
    { algorithm: 'token-bucket', limit: 100, windowMs: 500, burst: 100, tier: { mode: 'allotment' } },
    { algorithm: 'gcra', limit: 100, windowMs: 500, burst: 100, tier: { mode: 'allotment' } },
  ];
  /** Default maxAllotment: capacity / 8k. */
  const maxAllotment = Math.floor(100 / (8 * K));

  function checkFleet(run: Fleet, limits: readonly LimitSpec[]): void {
    // The shared path's bounds: no admission came from a fail mode (the deadline is generous).
    expect(run.admissions.filter((a) => a.outcome !== 'allowed').length).toBe(0);
    limits.forEach((l, i) => {
      // Driven above the limit: every limit rejected a share of its checks.
      expect(run.reports.reduce((sum, r) => sum + (r?.rejectedBy[i] ?? 0), 0), `rejections of ${l.algorithm}`).toBeGreaterThan(100);
      const keys = byKey(run.admissions, i);
      expect(keys.size).toBe(2);
      for (const times of keys.values()) {
        const perWindow = checkBound(l, times);
        if (l.algorithm !== 'fixed-window') continue;
        // Under-admission: every full window with the whole fleet demanding admits at least N - k x maxAllotment.
        const first = Math.floor(run.from / l.windowMs) + 1;
        const last = Math.floor(run.to / l.windowMs);
        expect(last - first, 'full windows with the whole fleet running').toBeGreaterThanOrEqual(1);
        for (let w = first; w < last; w++) {
          const [, all] = perWindow.get(w) ?? [0, 0];
          expect(all, `window ${w} admitted ${all}`).toBeGreaterThanOrEqual(l.limit - K * maxAllotment);
        }
      }
    });
  }

  it('driven above their limits: fleet admissions stay within the bound, for every supported algorithm', async () => {
    const run = await fleet({ limits: above, keys: 2, inflight: 8, ms: 3000, record: true }, K);
    console.log(`above the limit: ${decisions(run.reports)} decisions, ${run.admissions.length} admitted, ${run.calls} script calls`);
    checkFleet(run, above);
  }, 90_000);

  it('one process SIGKILLed mid-run: the fleet never admits beyond the bound', async () => {
    const run = await fleet({ limits: above, keys: 2, inflight: 8, ms: 3000, record: true }, K, { index: 0, afterMs: 1500 });
    expect(run.reports[0]).toBeUndefined();
    console.log(`with a SIGKILL: ${decisions(run.reports)} decisions by the survivors, ${run.admissions.length} admitted by all`);
    checkFleet(run, above);
  }, 90_000);
});

describe('local pre-filter under a single-source flood', () => {
  it('saves the store calls of the rejections and admits what the plain store admits', async () => {
    const limit = (tier?: TierDefinition): LimitSpec[] => [{ algorithm: 'fixed-window', limit: 100, windowMs: 500, ...(tier !== undefined ? { tier } : {}) }];
    const spec = { keys: 1, inflight: 16, ms: 2000, record: true, hotKey: true };
    const plain = await fleet({ ...spec, limits: limit() }, 1);
    const filtered = await fleet({ ...spec, limits: limit({ mode: 'pre-filter' }) }, 1);
    const plainPer = plain.calls / decisions(plain.reports);
    const filteredPer = filtered.calls / decisions(filtered.reports);
    console.log(
      `single-key flood: plain ${plain.calls} script calls for ${decisions(plain.reports)} decisions (${plainPer.toFixed(3)}), pre-filter ${filtered.calls} for ${decisions(filtered.reports)} (${filteredPer.toFixed(4)})`,
    );
    expect(plainPer / filteredPer).toBeGreaterThanOrEqual(10);
    for (const run of [plain, filtered]) {
      const l = limit()[0] as LimitSpec;
      const perWindow = checkBound(l, byKey(run.admissions, 0).get(0) ?? []);
      expect(run.admissions.filter((a) => a.outcome !== 'allowed').length).toBe(0);
      const first = Math.floor(run.from / l.windowMs) + 1;
      const last = Math.floor(run.to / l.windowMs);
      expect(last - first).toBeGreaterThanOrEqual(1);
      // The pre-filter refuses only what the store would refuse: every full window still admits N.
      for (let w = first; w < last; w++) expect((perWindow.get(w) ?? [0, 0])[1]).toBeGreaterThanOrEqual(l.limit);
    }
  }, 90_000);
});
