// The Redis chain on the OTP workload (issue 16), one run side by side:
//   node redis-otp.js        (BENCH_ROUNDS, default 3; BENCH_MEASURE_MS, 4000; BENCH_WARMUP_MS, 1000)
// Compiles ../src privately (dist.js), starts a redis-server pinned to CPU 1,
// and per round, in rotated order, measures in fresh processes pinned to
// CPU 0 (redis-pinned.js), 50 in flight each:
//   rc-otp      ratecontract, the OTP chain (recipient distinct, 100 tenants,
//               1,000 IPs, one global key) as one chain per check (batched);
//   rlf-otp     rate-limiter-flexible, 4 RateLimiterRedis consumes in sequence,
//               the same keys;
//   rc-otp-one  ratecontract, one limit (gcra per IP), for Redis CPU per decision.
// Redis CPU per decision is the INFO cpu delta (used_cpu_sys + used_cpu_user)
// over the measured window. Decisions a fail mode made are counted (a run with
// fallbacks measures the fallback). Prints markdown, writes
// results/redis-otp-latest.json. Reports; never asserts.

import { mkdirSync, writeFileSync } from 'node:fs';
import { privateBuild } from './dist.js';
import { fmt, int, machine, measure, median, perDecision, SERVER_CPU } from './redis-pinned.js';
import { startRedis } from './redis-server.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const measureMs = Number(process.env.BENCH_MEASURE_MS ?? 4000);
const warmupMs = Number(process.env.BENCH_WARMUP_MS ?? 1000);
const ids = ['rc-otp', 'rlf-otp', 'rc-otp-one'];
// (The labels of redis-contenders.js; importing it here would load a build before the private one is set.)
const LABELS = {
  'rc-otp': 'ratecontract, the OTP chain as one chain per check',
  'rlf-otp': 'rate-limiter-flexible, 4 RateLimiterRedis consumes in sequence',
  'rc-otp-one': 'ratecontract, one limit (gcra per IP)',
};
const log = (s) => process.stderr.write(s + '\n');

const m = machine();
const build = privateBuild(log);
m.ratecontract = build.revision;
const server = await startRedis({ maxSeconds: 900, log, cpu: SERVER_CPU });
const per = Object.fromEntries(ids.map((id) => [id, []]));
try {
  for (let r = 0; r < rounds; r++) {
    for (const id of ids.map((_, j) => ids[(j + r) % ids.length])) {
      const res = measure(id, server.port, { warmupMs, measureMs });
      per[id].push(res);
      log(`  round ${r + 1}/${rounds} ${id.padEnd(11)} ${int(res.perSec).padStart(8)}/s  redis ${fmt(res.redisCpuUsPerDecision, 1)} us  client ${fmt(res.clientCpuUsPerDecision, 1)} us  fellBack=${res.fellBack} rejected=${res.rejected} errors=${res.errors}`);
    }
  }
} finally {
  await server.stop();
  build.cleanup();
}

const sum = Object.fromEntries(
  ids.map((id) => {
    const xs = per[id];
    const md = (f) => median(xs.map(f));
    return [
      id,
      {
        label: LABELS[id],
        perSec: md((x) => x.perSec),
        p50Ms: md((x) => x.p50Ms),
        p99Ms: md((x) => x.p99Ms),
        clientCpuUs: md((x) => x.clientCpuUsPerDecision),
        redisCpuUs: md((x) => x.redisCpuUsPerDecision),
        scripts: md((x) => x.scriptsPerDecision),
        gets: md((x) => perDecision(x, 'get')),
        sets: md((x) => perDecision(x, 'set')),
        roundsPerSec: xs.map((x) => Math.round(x.perSec)),
        fellBack: xs.some((x) => x.fellBack === null) ? null : xs.reduce((a, x) => a + x.fellBack, 0),
        rejected: xs.reduce((a, x) => a + x.rejected, 0),
        errors: xs.reduce((a, x) => a + x.errors, 0),
        decisions: xs.reduce((a, x) => a + x.decisions, 0),
      },
    ];
  }),
);
m.loadavgEnd = (await import('node:os')).default.loadavg().map((x) => Number(x.toFixed(2)));

console.log(`machine: ${m.cpu}, ${m.cores} cores, ${m.platform}; Node ${m.node}; ${m.redis}`);
console.log(`ratecontract: ${m.ratecontract}; redis-server pinned to CPU ${SERVER_CPU}, each client process to the other; load average ${m.loadavgStart.join(' ')} at start, ${m.loadavgEnd.join(' ')} at end`);
console.log(`${rounds} rounds, rotated order; each measurement a fresh process, 50 in flight, ${warmupMs} ms warm-up, ${measureMs} ms measured; medians of the rounds`);
console.log();
console.log('| contender | decisions/s (rounds) | p50 ms | p99 ms | client CPU us/decision | redis-server CPU us/decision | scripts/decision | GET/decision | SET/decision | fell back | rejected | errors |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const id of ids) {
  const x = sum[id];
  console.log(
    `| ${x.label} | ${int(x.perSec)} (${x.roundsPerSec.map(int).join(', ')}) | ${fmt(x.p50Ms)} | ${fmt(x.p99Ms)} | ${fmt(x.clientCpuUs, 1)} | ${fmt(x.redisCpuUs, 1)} | ${fmt(x.scripts, 3)} | ${fmt(x.gets)} | ${fmt(x.sets)} | ${x.fellBack ?? 'n/a'} | ${x.rejected} | ${x.errors} |`,
  );
}
const fellBack = sum['rc-otp'].fellBack + sum['rc-otp-one'].fellBack;
const targets = [
  { target: 'OTP chain >= 2x rate-limiter-flexible doing the same 4 consumes', value: sum['rc-otp'].perSec / sum['rlf-otp'].perSec, goal: 2, le: false },
  { target: 'Redis CPU per OTP decision <= 2.5x a one-limit decision', value: sum['rc-otp'].redisCpuUs / sum['rc-otp-one'].redisCpuUs, goal: 2.5, le: true },
];
console.log();
console.log('| target | value | met |');
console.log('| --- | ---: | --- |');
for (const t of targets) console.log(`| ${t.target} | ${fmt(t.value)}x | ${(t.le ? t.value <= t.goal : t.value >= t.goal) && fellBack === 0 ? 'yes' : 'NO'} |`);
console.log(`| ratecontract decisions made by a fail mode (must be 0 for the figures to measure the store) | ${fellBack} | ${fellBack === 0 ? 'yes' : 'NO'} |`);

mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/redis-otp-latest.json', import.meta.url), JSON.stringify({ machine: m, rounds, warmupMs, measureMs, contenders: sum, targets, raw: per }, null, 2) + '\n');
