// Issue 23's same-run comparison, pinned and interleaved:
//   node redis-speed.js [--rounds 5] [--ms 3000] [--warmup 1000] [--before DIST_DIR] [--only one,otp]
// Compiles ../src privately (dist.js), starts a redis-server pinned to CPU 1,
// and per round measures, each in a fresh process pinned to CPU 0
// (redis-pinned.js), 50 in flight, every contender in the same order
// (A B C ... A B C ...), so that a change of load on the shared host falls on
// every contender of a round alike:
//   one limit, 100 keys and 100,000 keys (BENCH_KEYS): rc-gcra (ratecontract,
//     one GCRA limit), rlr (rate-limit-redis), rlf (rate-limiter-flexible
//     RateLimiterRedis), all over ioredis;
//   the OTP chain: rc-otp (4 limits on 4 keys, one chain), rlf-otp (the same
//     4 consumes), rc-otp-one (one limit on the same IPs, for Redis CPU);
//   with --before DIR, rc-gcra and rc-otp again on another build (a dist/
//     directory), for client CPU before and after in the same run.
// Then the redis-benchmark EVALSHA ceiling of gcra-min.lua at -P 16
// (redis-ceiling.js) on the same server. Ratios are computed within each
// round; the report gives their median and range. Decisions a fail mode made
// are counted per contender (they must be 0). Prints markdown, writes
// results/redis-speed-latest.json. Reports; never asserts.

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { privateBuild } from './dist.js';
import { fmt, int, machine, measure, median, SERVER_CPU } from './redis-pinned.js';
import { startRedis } from './redis-server.js';

const { values: opt } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    ms: { type: 'string', default: '3000' },
    warmup: { type: 'string', default: '1000' },
    before: { type: 'string' },
    only: { type: 'string', default: 'one,otp' },
  },
});
const rounds = Number(opt.rounds);
const measureMs = Number(opt.ms);
const warmupMs = Number(opt.warmup);
const parts = new Set(opt.only.split(','));
const log = (s) => process.stderr.write(s + '\n');
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

/** Rows: [row id, contender id of redis-contenders.js, extra environment, label]. */
const rows = [];
if (parts.has('one')) {
  for (const keys of [100, 100_000]) {
    const env = { BENCH_KEYS: String(keys) };
    const k = keys === 100 ? '100' : '100k';
    rows.push([`rc-gcra@${k}`, 'rc-gcra', env, `ratecontract, one GCRA limit, ${int(keys)} keys`]);
    if (opt.before) rows.push([`rc-gcra-before@${k}`, 'rc-gcra', { ...env, RATECONTRACT_DIST_DIR: opt.before }, `ratecontract before (${opt.before}), ${int(keys)} keys`]);
    rows.push([`rlr@${k}`, 'rlr', env, `rate-limit-redis (ioredis), ${int(keys)} keys`]);
    rows.push([`rlf@${k}`, 'rlf', env, `rate-limiter-flexible RateLimiterRedis (ioredis), ${int(keys)} keys`]);
  }
}
if (parts.has('otp')) {
  rows.push(['rc-otp', 'rc-otp', {}, 'ratecontract, the OTP chain (4 limits, 4 keys), one chain']);
  if (opt.before) rows.push(['rc-otp-before', 'rc-otp', { RATECONTRACT_DIST_DIR: opt.before }, `ratecontract before (${opt.before}), the OTP chain`]);
  rows.push(['rlf-otp', 'rlf-otp', {}, 'rate-limiter-flexible, the same 4 consumes in sequence']);
  rows.push(['rc-otp-one', 'rc-otp-one', {}, 'ratecontract, one limit (gcra per IP, 1,000 IPs)']);
}

const m = machine();
const build = privateBuild(log);
m.ratecontract = build.revision;
const { ceilingOnce, CEILING_RUNS } = await import('./redis-ceiling.js');
const server = await startRedis({ maxSeconds: 1800, log, cpu: SERVER_CPU });
const per = Object.fromEntries(rows.map(([id]) => [id, []]));
const loads = [];
let ceiling;
try {
  for (let r = 0; r < rounds; r++) {
    loads.push({ round: r + 1, start: load() });
    for (const [id, contender, env] of rows) {
      const res = measure(contender, server.port, { warmupMs, measureMs, env });
      res.load = load();
      per[id].push(res);
      log(`  round ${r + 1}/${rounds} ${id.padEnd(20)} ${int(res.perSec).padStart(8)}/s p99 ${fmt(res.p99Ms)} ms client ${fmt(res.clientCpuUsPerDecision, 1)} us redis ${fmt(res.redisCpuUsPerDecision, 1)} us fellBack=${res.fellBack} errors=${res.errors} load ${res.load}`);
    }
    loads[r].end = load();
  }
  const admin = new Redis({ host: '127.0.0.1', port: server.port });
  const run = CEILING_RUNS.find((x) => x.id === 'gcra-min');
  ceiling = await ceilingOnce(admin, server.port, run, 16, 300_000);
  ceiling.load = load();
  log(`  ceiling gcra-min -P 16: ${int(ceiling.rps)}/s, redis ${fmt(ceiling.redisCpuUsPerCall, 1)} us/call, load ${ceiling.load}`);
  await admin.quit();
} finally {
  await server.stop();
  build.cleanup();
}
m.loadavgEnd = os.loadavg().map((x) => Number(x.toFixed(2)));

const sum = {};
for (const [id, , , label] of rows) {
  const xs = per[id];
  const md = (f) => median(xs.map(f));
  sum[id] = {
    label,
    perSec: md((x) => x.perSec),
    rounds: xs.map((x) => Math.round(x.perSec)),
    p50Ms: md((x) => x.p50Ms),
    p99Ms: md((x) => x.p99Ms),
    clientCpuUs: md((x) => x.clientCpuUsPerDecision),
    redisCpuUs: md((x) => x.redisCpuUsPerDecision),
    scripts: md((x) => x.scriptsPerDecision),
    fellBack: xs.some((x) => x.fellBack === null) ? null : xs.reduce((a, x) => a + x.fellBack, 0),
    errors: xs.reduce((a, x) => a + x.errors, 0),
    rejected: xs.reduce((a, x) => a + x.rejected, 0),
    decisions: xs.reduce((a, x) => a + x.decisions, 0),
  };
}
/** The ratio f(a) / f(b) in each round: median, min, max. */
function ratio(a, b, f = (x) => x.perSec) {
  const xs = per[a].map((x, r) => f(x) / f(per[b][r]));
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), rounds: xs };
}
const spread = (q) => `${fmt(q.median)}x (${fmt(q.min)} to ${fmt(q.max)})`;

console.log(`machine: ${m.cpu}, ${m.cores} cores, ${m.platform}; Node ${m.node}; ${m.redis}`);
console.log(`ratecontract: ${m.ratecontract}; ${m.date}; load average ${m.loadavgStart.join(' ')} at start, ${m.loadavgEnd.join(' ')} at end`);
console.log(`redis-server pinned to CPU ${SERVER_CPU}, each client a fresh process on the other; ${rounds} interleaved rounds (every contender once per round, same order), ${warmupMs} ms warm-up, ${measureMs} ms measured, 50 in flight; medians of the rounds`);
console.log(`load average (1 min) per round: ${loads.map((l) => `${l.start.split(' ')[0]}..${l.end.split(' ')[0]}`).join(', ')}`);
console.log();
console.log('| contender | decisions/s (rounds) | p50 ms | p99 ms | client CPU us/decision | redis-server CPU us/decision | scripts/decision | fell back | errors | rejected |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const [id] of rows) {
  const x = sum[id];
  console.log(`| ${x.label} | ${int(x.perSec)} (${x.rounds.map(int).join(', ')}) | ${fmt(x.p50Ms)} | ${fmt(x.p99Ms)} | ${fmt(x.clientCpuUs, 1)} | ${fmt(x.redisCpuUs, 1)} | ${fmt(x.scripts, 3)} | ${x.fellBack ?? 'n/a'} | ${x.errors} | ${x.rejected} |`);
}
if (ceiling) console.log(`| redis-benchmark EVALSHA gcra-min.lua -P 16, 50 connections (the ceiling) | ${int(ceiling.rps)} | ${fmt(ceiling.p50Ms)} | ${fmt(ceiling.p99Ms)} | (C client) | ${fmt(ceiling.redisCpuUsPerCall, 1)} | 1 | | | |`);

const targets = [];
const t = (target, q, goal, le = false) => targets.push({ target, ...q, goal, met: le ? q.median <= goal : q.median >= goal });
if (parts.has('one')) {
  for (const k of ['100', '100k']) {
    t(`one limit, ${k} keys: decisions/s vs rate-limit-redis (>= 1.2x)`, ratio(`rc-gcra@${k}`, `rlr@${k}`), 1.2);
    t(`one limit, ${k} keys: decisions/s vs rate-limiter-flexible (>= 1.3x)`, ratio(`rc-gcra@${k}`, `rlf@${k}`), 1.3);
    t(`one limit, ${k} keys: p99 vs rate-limit-redis's (<= 1.0x)`, ratio(`rc-gcra@${k}`, `rlr@${k}`, (x) => x.p99Ms), 1, true);
    if (opt.before) t(`one limit, ${k} keys: client CPU us/decision, after / before (lower is better)`, ratio(`rc-gcra@${k}`, `rc-gcra-before@${k}`, (x) => x.clientCpuUsPerDecision), 1, true);
  }
  const q = (f) => ({ median: median(['100', '100k'].map((k) => sum[`rc-gcra@${k}`][f])), min: Math.min(...['100', '100k'].flatMap((k) => per[`rc-gcra@${k}`].map((x) => x[f === 'clientCpuUs' ? 'clientCpuUsPerDecision' : 'redisCpuUsPerDecision']))), max: Math.max(...['100', '100k'].flatMap((k) => per[`rc-gcra@${k}`].map((x) => x[f === 'clientCpuUs' ? 'clientCpuUsPerDecision' : 'redisCpuUsPerDecision']))) });
  const cc = q('clientCpuUs');
  const rc = q('redisCpuUs');
  targets.push({ target: 'client CPU per one-limit decision <= 10 us (us, not a ratio)', ...cc, goal: 10, met: cc.median <= 10, unit: 'us' });
  targets.push({ target: 'Redis CPU per one-limit decision <= 8 us (us, not a ratio)', ...rc, goal: 8, met: rc.median <= 8, unit: 'us' });
}
if (parts.has('otp')) {
  t('OTP chain: decisions/s vs rate-limiter-flexible doing the same 4 consumes (>= 2x)', ratio('rc-otp', 'rlf-otp'), 2);
  t('OTP chain: Redis CPU per decision vs one limit (<= 2.5x)', ratio('rc-otp', 'rc-otp-one', (x) => x.redisCpuUsPerDecision), 2.5, true);
  if (opt.before) t('OTP chain: client CPU us/decision, after / before (lower is better)', ratio('rc-otp', 'rc-otp-before', (x) => x.clientCpuUsPerDecision), 1, true);
}
const fellBack = Object.entries(sum).filter(([id]) => id.startsWith('rc-')).reduce((a, [, x]) => a + (x.fellBack ?? 0), 0);
console.log();
console.log('| target | median (range over rounds) | met |');
console.log('| --- | ---: | --- |');
for (const x of targets) console.log(`| ${x.target} | ${x.unit ? `${fmt(x.median, 1)} (${fmt(x.min, 1)} to ${fmt(x.max, 1)})` : spread(x)} | ${x.met && fellBack === 0 ? 'yes' : 'NO'} |`);
console.log(`| ratecontract decisions made by a fail mode, all rows and rounds | ${fellBack} | ${fellBack === 0 ? 'yes' : 'NO'} |`);

mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/redis-speed-latest.json', import.meta.url), JSON.stringify({ machine: m, rounds, warmupMs, measureMs, loads, contenders: sum, targets, ceiling, raw: per }, null, 2) + '\n');
