// Redis CPU per decision, per store mode, for sizing a fleet's Redis (issue 16):
//   node fleet-sizing.js [--modes plain,batched] [--limits one,otp] [--rounds 3] [--ms 4000]
// Compiles ../src privately (dist.js), starts a redis-server pinned to CPU 1
// and measures each mode x workload in fresh client processes pinned to CPU 0
// (redis-pinned.js), 50 in flight, rounds in alternating order. Redis CPU
// microseconds per decision = the INFO cpu delta (used_cpu_sys +
// used_cpu_user) over the measured window / the decisions in it; one Redis
// core then sustains at most 1e6 / that many decisions per second. Modes:
// fleet-modes.js. Prints markdown, writes results/fleet-sizing-latest.json.

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { privateBuild } from './dist.js';
import { FLEET_LIMITS, FLEET_MODES } from './fleet-modes.js';
import { fmt, int, machine, measure, median, perDecision, SERVER_CPU } from './redis-pinned.js';
import { startRedis } from './redis-server.js';

const { values } = parseArgs({
  options: {
    modes: { type: 'string', default: Object.keys(FLEET_MODES).join(',') },
    limits: { type: 'string', default: Object.keys(FLEET_LIMITS).join(',') },
    rounds: { type: 'string', default: '3' },
    ms: { type: 'string', default: '4000' },
    warmup: { type: 'string', default: '1000' },
  },
});
const modes = values.modes.split(',').filter(Boolean);
const limits = values.limits.split(',').filter(Boolean);
for (const mode of modes) if (FLEET_MODES[mode] === undefined) throw new Error(`--modes: unknown mode ${JSON.stringify(mode)} (known: ${Object.keys(FLEET_MODES).join(', ')})`);
for (const l of limits) if (FLEET_LIMITS[l] === undefined) throw new Error(`--limits: unknown workload ${JSON.stringify(l)} (known: ${Object.keys(FLEET_LIMITS).join(', ')})`);
const rounds = Number(values.rounds);
const measureMs = Number(values.ms);
const warmupMs = Number(values.warmup);
const log = (s) => process.stderr.write(s + '\n');

const m = machine();
const build = privateBuild(log);
m.ratecontract = build.revision;
const server = await startRedis({ maxSeconds: 1800, log, cpu: SERVER_CPU });
const cells = modes.flatMap((mode) => limits.map((l) => ({ mode, limit: l, id: FLEET_MODES[mode].contenders[l] })));
const per = Object.fromEntries(cells.map((c) => [`${c.mode}/${c.limit}`, []]));
try {
  for (let r = 0; r < rounds; r++) {
    for (const c of r % 2 === 0 ? cells : [...cells].reverse()) {
      const res = measure(c.id, server.port, { warmupMs, measureMs, env: FLEET_MODES[c.mode].env });
      per[`${c.mode}/${c.limit}`].push(res);
      log(`  round ${r + 1}/${rounds} ${c.mode}/${c.limit}: ${int(res.perSec)}/s, redis ${fmt(res.redisCpuUsPerDecision, 1)} us/decision, fellBack=${res.fellBack}`);
    }
  }
} finally {
  await server.stop();
  build.cleanup();
}
m.loadavgEnd = os.loadavg().map((x) => Number(x.toFixed(2)));

const rows = cells.map((c) => {
  const xs = per[`${c.mode}/${c.limit}`];
  const md = (f) => median(xs.map(f));
  const redisCpuUs = md((x) => x.redisCpuUsPerDecision);
  return {
    ...c,
    perSec: md((x) => x.perSec),
    redisCpuUs,
    redisCpuUsRounds: xs.map((x) => Number(x.redisCpuUsPerDecision.toFixed(2))),
    perCore: 1e6 / redisCpuUs,
    clientCpuUs: md((x) => x.clientCpuUsPerDecision),
    scripts: md((x) => x.scriptsPerDecision),
    commands: md((x) => Object.entries(x.commands).reduce((a, [k, v]) => (k === 'evalsha' || k === 'eval' ? a : a + v), 0) / x.decisions),
    gets: md((x) => perDecision(x, 'get')),
    fellBack: xs.reduce((a, x) => a + (x.fellBack ?? 0), 0),
    errors: xs.reduce((a, x) => a + x.errors, 0),
  };
});

console.log(`machine: ${m.cpu}, ${m.cores} cores, ${m.platform}; Node ${m.node}; ${m.redis}`);
console.log(`ratecontract: ${m.ratecontract}; redis-server pinned to CPU ${SERVER_CPU}, clients to the other; load average ${m.loadavgStart.join(' ')} at start, ${m.loadavgEnd.join(' ')} at end`);
console.log(`${rounds} rounds; each cell a fresh process, 50 in flight, ${warmupMs} ms warm-up, ${measureMs} ms measured; medians`);
console.log();
console.log('| mode | workload | redis-server CPU us/decision (rounds) | decisions/s per Redis core (1e6 / us) | measured decisions/s | scripts/decision | commands the scripts ran per decision | client CPU us/decision | fell back | errors |');
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(
    `| ${r.mode} | ${r.limit} | ${fmt(r.redisCpuUs, 1)} (${r.redisCpuUsRounds.map((x) => fmt(x, 1)).join(', ')}) | ${int(r.perCore)} | ${int(r.perSec)} | ${fmt(r.scripts, 3)} | ${fmt(r.commands, 2)} | ${fmt(r.clientCpuUs, 1)} | ${r.fellBack} | ${r.errors} |`,
  );
}
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/fleet-sizing-latest.json', import.meta.url), JSON.stringify({ machine: m, rounds, warmupMs, measureMs, rows, raw: per }, null, 2) + '\n');
