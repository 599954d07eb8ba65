// In-memory decision throughput: every contender makes one awaited decision
// per iteration, on 1 hot key and on 100,000 keys round-robin. Measured with
// mitata's `measure` in a fresh child process per measurement (batches of 4,096 awaited calls per sample, so the
// timer's own cost is amortised; the mean per call includes GC). The clock
// is the child's CPU time by default (see throughput-child.js), so other
// processes on a shared 2-core machine cannot inflate it. Several rounds,
// contender order rotated each round, a fresh process each time; the median
// round is reported (the best round is kept in the JSON too).

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { contenders } from './contenders.js';

export const SCENARIOS = [
  { id: 'hot', label: '1 hot key', keys: 1 },
  { id: 'spread', label: '100,000 keys round-robin', keys: 100_000 },
];

const child = fileURLToPath(new URL('./throughput-child.js', import.meta.url));

function once(id, scenario, minCpuMs, clock) {
  const r = spawnSync(process.execPath, ['--expose-gc', child, id, String(scenario.keys), String(minCpuMs), clock], {
    encoding: 'utf8',
    timeout: 60_000,
    killSignal: 'SIGKILL',
  });
  if (r.status !== 0) throw new Error(`throughput child ${id}/${scenario.id} failed (status ${r.status}, signal ${r.signal}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Runs every throughput contender on every scenario for `rounds` rounds;
 * `clock`: 'cpu' (default) or 'wall'. Returns
 * { [scenario]: { [contender]: { avgNs (median round), opsPerSec, bestNs, roundsNs, rejected, measuredDecisions } } }.
 */
export async function runThroughput({ rounds = 5, minCpuMs = 400, clock = 'cpu', log = () => {} } = {}) {
  const ids = Object.keys(contenders).filter((id) => contenders[id].throughput);
  const out = {};
  for (const scenario of SCENARIOS) {
    const per = Object.fromEntries(ids.map((id) => [id, []]));
    for (let r = 0; r < rounds; r++) {
      const order = ids.map((_, j) => ids[(j + r) % ids.length]);
      for (const id of order) {
        const res = once(id, scenario, minCpuMs, clock);
        per[id].push(res);
        log(`  ${scenario.id} round ${r + 1}/${rounds} ${id.padEnd(18)} ${res.avgNs.toFixed(1).padStart(8)} ns/decision  rejected=${res.rejected}`);
      }
    }
    out[scenario.id] = Object.fromEntries(
      ids.map((id) => {
        const avgNs = median(per[id].map((x) => x.avgNs));
        return [
          id,
          {
            label: contenders[id].label,
            avgNs,
            opsPerSec: 1e9 / avgNs,
            bestNs: Math.min(...per[id].map((x) => x.avgNs)),
            clock,
            roundsNs: per[id].map((x) => x.avgNs),
            rejected: per[id].reduce((a, x) => a + x.rejected, 0),
            measuredDecisions: per[id].reduce((a, x) => a + x.ticks, 0),
          },
        ];
      }),
    );
  }
  return out;
}
