// Redis decision throughput, one run side by side: `node run-redis.js`
// (npm run bench:redis). Starts its own redis-server on a free 127.0.0.1 port
// (no persistence), runs every contender in a fresh child process per
// measurement (redis-child.js: 50 in flight, 1 s warm-up, 4 s measured) for
// several rounds with the order rotated, then redis-benchmark's EVALSHA
// ceiling on the same server, stops the server, prints markdown tables and
// writes results/redis-latest.{md,json}. Reports; never asserts.
// Environment: BENCH_ROUNDS (default 3), BENCH_MEASURE_MS (4000), BENCH_WARMUP_MS (1000).

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { privateBuild, revision } from './dist.js';
import { startRedis } from './redis-server.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const measureMs = Number(process.env.BENCH_MEASURE_MS ?? 4000);
const warmupMs = Number(process.env.BENCH_WARMUP_MS ?? 1000);
const INFLIGHT = 50;
const PIPELINES = [1, 16];
/** Calls per redis-benchmark run, by script and pipeline depth: about 3 s each here. */
const CEILING_CALLS = { 'gcra-min': { 1: 150_000, 16: 300_000 }, 'chain-1': { 1: 100_000, 16: 150_000 }, 'chain-4': { 1: 50_000, 16: 60_000 } };

const log = (s) => process.stderr.write(s + '\n');
const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
const int = (x) => Math.round(x).toLocaleString('en-US');
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const redisVersion = execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim();
const machine = {
  node: process.version,
  v8: process.versions.v8,
  cpu: os.cpus()[0]?.model ?? 'unknown',
  cores: os.cpus().length,
  memGiB: Math.round(os.totalmem() / 2 ** 30),
  platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  redis: redisVersion,
  date: new Date().toISOString(),
  loadavgStart: os.loadavg().map((x) => Number(x.toFixed(2))),
};
// A private build of src/ for this run (children load it through RATECONTRACT_DIST_DIR).
const build = privateBuild(log);
machine.ratecontract = build.revision;
const { CEILING_RUNS, ceilingOnce } = await import('./redis-ceiling.js');
const { DEADLINE_MS, redisContenders } = await import('./redis-contenders.js');

const lines = [];
const print = (s = '') => {
  lines.push(s);
  console.log(s);
};
const t0 = performance.now();
const child = fileURLToPath(new URL('./redis-child.js', import.meta.url));

const server = await startRedis({ maxSeconds: 600, log });
const ids = Object.keys(redisContenders);
const per = Object.fromEntries(ids.map((id) => [id, []]));
const ceiling = {};
try {
  for (let r = 0; r < rounds; r++) {
    const order = ids.map((_, j) => ids[(j + r) % ids.length]);
    for (const id of order) {
      const x = spawnSync(process.execPath, [child, id, String(server.port), String(warmupMs), String(measureMs), String(INFLIGHT)], {
        encoding: 'utf8',
        timeout: warmupMs + measureMs + 60_000,
        killSignal: 'SIGKILL',
      });
      if (x.status !== 0) throw new Error(`redis child ${id} failed (status ${x.status}, signal ${x.signal}): ${x.stderr}`);
      const res = JSON.parse(x.stdout.trim().split('\n').pop());
      per[id].push(res);
      log(
        `  round ${r + 1}/${rounds} ${id.padEnd(20)} ${int(res.perSec).padStart(8)}/s  p50 ${fmt(res.p50Ms)} p99 ${fmt(res.p99Ms)} ms  cpu client ${fmt(res.clientCpuUsPerDecision, 1)} redis ${fmt(res.redisCpuUsPerDecision, 1)} us  rejected=${res.rejected} errors=${res.errors} diag=${JSON.stringify(res.diagnostics)}`,
      );
      if (res.firstError) log(`    first error: ${res.firstError}`);
    }
    // The ceiling, in the same round (so it sees the same machine load).
    const admin = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: true });
    await admin.connect();
    try {
      for (const run of CEILING_RUNS) {
        for (const P of PIPELINES) {
          const res = await ceilingOnce(admin, server.port, run, P, CEILING_CALLS[run.id][P]);
          (ceiling[`${run.id} -P ${P}`] ??= { run, P, rounds: [] }).rounds.push(res);
          log(`  round ${r + 1}/${rounds} redis-benchmark ${run.id} -P ${P}: ${int(res.rps)}/s  p50 ${res.p50Ms} p99 ${res.p99Ms} ms  redis cpu ${fmt(res.redisCpuUsPerCall, 1)} us/call`);
        }
      }
      await admin.flushall();
    } finally {
      admin.disconnect();
    }
  }
} finally {
  await server.stop();
  build.cleanup();
}

const summary = Object.fromEntries(
  ids.map((id) => {
    const xs = per[id];
    const m = (f) => median(xs.map(f));
    return [
      id,
      {
        label: redisContenders[id].label,
        limits: redisContenders[id].limits,
        perSec: m((x) => x.perSec),
        p50Ms: m((x) => x.p50Ms),
        p99Ms: m((x) => x.p99Ms),
        clientCpuUs: m((x) => x.clientCpuUsPerDecision),
        redisCpuUs: m((x) => x.redisCpuUsPerDecision),
        scriptsPerDecision: m((x) => x.scriptsPerDecision),
        redisCommandsPerDecision: m((x) => Object.entries(x.commands).reduce((a, [k, v]) => (k.startsWith('config') ? a : a + v), 0) / x.decisions),
        roundsPerSec: xs.map((x) => x.perSec),
        rejected: xs.reduce((a, x) => a + x.rejected, 0),
        errors: xs.reduce((a, x) => a + x.errors, 0),
        decisions: xs.reduce((a, x) => a + x.decisions, 0),
        diagnostics: xs.reduce((a, x) => {
          for (const [k, v] of Object.entries(x.diagnostics)) a[k] = (a[k] ?? 0) + v;
          return a;
        }, {}),
      },
    ];
  }),
);
const ceil = Object.fromEntries(
  Object.entries(ceiling).map(([k, v]) => {
    const m = (f) => median(v.rounds.map(f));
    return [k, { label: v.run.label, P: v.P, rps: m((x) => x.rps), p50Ms: m((x) => x.p50Ms), p99Ms: m((x) => x.p99Ms), redisCpuUs: m((x) => x.redisCpuUsPerCall), roundsRps: v.rounds.map((x) => x.rps), command: v.rounds[0].command }];
  }),
);

print(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, ${machine.platform}; Node ${machine.node}; ${machine.redis}`);
print(`ratecontract: ${machine.ratecontract} (src/ compiled into a private directory for this run); store deadlineMs ${DEADLINE_MS}`);
print(`load average at start: ${machine.loadavgStart.join(' ')}`);
print(`${rounds} rounds; each measurement a fresh process, ${INFLIGHT} in flight, ${warmupMs} ms warm-up, ${measureMs} ms measured; medians of the rounds`);

const sum = summary;
const ceilOne = ceil['gcra-min -P 16'];
const ceilOneP1 = ceil['gcra-min -P 1'];
const header = (extra) =>
  `| contender | decisions/s | p50 ms | p99 ms | ${extra} | client CPU us/decision | redis-server CPU us/decision | scripts (round trips) per decision | Redis commands per decision | rejected | errors |`;
/** The markdown alignment row for a header row: first column left, the rest right. */
const align = (h) => `| --- |${' ---: |'.repeat(h.split('|').length - 3)}`;
const row = (id, ratios) => {
  const x = sum[id];
  return `| ${x.label} | ${int(x.perSec)} | ${fmt(x.p50Ms)} | ${fmt(x.p99Ms)} | ${ratios.map((v) => `${fmt(v)}x`).join(' | ')} | ${fmt(x.clientCpuUs, 1)} | ${fmt(x.redisCpuUs, 1)} | ${fmt(x.scriptsPerDecision)} | ${fmt(x.redisCommandsPerDecision, 1)} | ${x.rejected} | ${x.errors} |`;
};

print();
print(`### One limit (ip), ${INFLIGHT} in flight`);
print();
const h1 = header('vs rate-limiter-flexible | vs redis-benchmark gcra-min -P 16 | vs redis-benchmark gcra-min -P 1');
print(h1);
print(align(h1));
for (const id of ids.filter((i) => sum[i].limits === 1)) print(row(id, [sum[id].perSec / sum.rlf.perSec, sum[id].perSec / ceilOne.rps, sum[id].perSec / ceilOneP1.rps]));

print();
print(`### Four-limit chain (recipient, tenant, ip, global), ${INFLIGHT} in flight`);
print();
const h4 = header('vs rate-limiter-flexible x4 | vs ratecontract one limit');
print(h4);
print(align(h4));
for (const id of ids.filter((i) => sum[i].limits === 4)) print(row(id, [sum[id].perSec / sum['rlf-x4'].perSec, sum[id].perSec / sum['rc-gcra'].perSec]));

print();
print('### Ceiling: redis-benchmark, EVALSHA, 50 connections, 10,000 random keys');
print();
print('| script | pipeline | calls/s | p50 ms | p99 ms | redis-server CPU us/call |');
print('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const [, x] of Object.entries(ceil)) print(`| ${x.label} | -P ${x.P} | ${int(x.rps)} | ${fmt(x.p50Ms)} | ${fmt(x.p99Ms)} | ${fmt(x.redisCpuUs, 1)} |`);
print();
print('Commands (PORT and the SHA1 vary):');
print();
for (const [, x] of Object.entries(ceil)) print(`    ${x.command}`);

print();
print("### ratecontract diagnostics channels, all rounds (counts over each child's whole life, warm-up included)");
print();
print('| contender | decisions (measured windows) | ratecontract:timeout | ratecontract:store-error | ratecontract:fallback | ratecontract:fail-closed | ratecontract:breaker |');
print('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const id of ids.filter((i) => i.startsWith('rc-'))) {
  const d = sum[id].diagnostics;
  print(`| ${sum[id].label} | ${int(sum[id].decisions)} | ${d.timeout} | ${d.storeError} | ${d.fallback} | ${d.failClosed} | ${d.breaker} |`);
}

const targets = [
  { target: 'one-limit check >= 0.8x redis-benchmark ceiling (gcra-min, pipelined -P 16, 50 clients)', value: sum['rc-gcra'].perSec / ceilOne.rps, goal: 0.8 },
  { target: '(for reference) one-limit check vs the unpipelined ceiling (-P 1)', value: sum['rc-gcra'].perSec / ceilOneP1.rps, goal: 0.8 },
  { target: "(for reference) one-limit check vs its own script's pipelined ceiling (chain.lua, one limit, -P 16)", value: sum['rc-gcra'].perSec / ceil['chain-1 -P 16'].rps, goal: 0.8 },
  { target: 'one-limit check >= 1.2x rate-limiter-flexible', value: sum['rc-gcra'].perSec / sum.rlf.perSec, goal: 1.2 },
  { target: 'four-limit chain >= 3x rate-limiter-flexible with four limiters', value: sum['rc-chain4'].perSec / sum['rlf-x4'].perSec, goal: 3 },
  { target: "(for reference) four-limit chain vs its own script's pipelined ceiling (chain.lua, four limits, -P 16)", value: sum['rc-chain4'].perSec / ceil['chain-4 -P 16'].rps, goal: 0.8 },
  { target: "four-limit chain >= 0.6x ratecontract's own one-limit throughput", value: sum['rc-chain4'].perSec / sum['rc-gcra'].perSec, goal: 0.6 },
];
const diagTotal = ids.filter((i) => i.startsWith('rc-')).reduce((a, id) => a + sum[id].diagnostics.timeout + sum[id].diagnostics.storeError + sum[id].diagnostics.fallback, 0);
print();
print('### Targets (issue 3)');
print();
print('| target | value | met |');
print('| --- | ---: | --- |');
for (const t of targets) print(`| ${t.target} | ${fmt(t.value)}x | ${t.target.startsWith('(') ? '' : t.value >= t.goal ? 'yes' : 'NO'} |`);
print(`| no timeout, store error or fallback during the benchmark | ${diagTotal} | ${diagTotal === 0 ? 'yes' : 'NO'} |`);

const elapsedS = (performance.now() - t0) / 1000;
machine.loadavgEnd = os.loadavg().map((x) => Number(x.toFixed(2)));
machine.ratecontractAtEnd = revision();
if (machine.ratecontractAtEnd !== machine.ratecontract) print(`note: the repository moved on during the run (${machine.ratecontractAtEnd} at the end); every measurement used the build of ${machine.ratecontract}.`);
print();
print(`elapsed: ${fmt(elapsedS, 0)} s; load average at end: ${machine.loadavgEnd.join(' ')}`);

mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
const out = { machine, rounds, inflight: INFLIGHT, warmupMs, measureMs, deadlineMs: DEADLINE_MS, contenders: summary, ceiling: ceil, targets, raw: per, elapsedS };
writeFileSync(new URL('./results/redis-latest.json', import.meta.url), JSON.stringify(out, null, 2) + '\n');
writeFileSync(new URL('./results/redis-latest.md', import.meta.url), lines.join('\n') + '\n');
