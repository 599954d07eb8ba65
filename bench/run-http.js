// HTTP requests per second and latency, one run side by side:
// `node run-http.js` (npm run bench:http). For node:http, Express, Fastify
// and Hono on Node: bare, with ratecontract (memory store, limit never
// reached; defaults, and advertise: 'always'), and with the framework's usual
// limiter. Per framework, every variant's server (http-server.js) runs in its
// own process on 127.0.0.1 for the whole framework's measurement, warmed by a
// 1 s run of the load generator. Then rounds of short measured runs, one per
// variant in turn (order reversed every other round), so that every variant
// samples the same stretches of this shared machine's speed, which drifts by
// tens of percent within a minute. Requests/s and CPU per request are totals
// over all rounds (total requests / total time, total CPU / total requests);
// p50 and p99 are medians of the rounds. Prints markdown tables, writes
// results/http-latest.{md,json}. Reports; never asserts.
//
// Load generator: wrk (C, one thread, 50 keep-alive connections: closed loop,
// 50 requests in flight), from Debian's `wrk` package; if it is not installed,
// autocannon (Node, in this process) instead, which is noted in the output.
// Environment: BENCH_ROUNDS (8), BENCH_MEASURE_S (2), BENCH_LOADGEN (wrk | autocannon).

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { privateBuild, revision } from './dist.js';
import { CONNECTIONS, loadgen, loadgenLabel, startServer } from './http-measure.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 8);
const measureS = Number(process.env.BENCH_MEASURE_S ?? 2);
const FRAMEWORKS = [
  { id: 'node', label: 'node:http', incumbent: 'rate-limiter-flexible RateLimiterMemory, called in the handler (no middleware exists)', target: false },
  { id: 'express', label: 'Express 5', incumbent: 'express-rate-limit', target: true },
  { id: 'fastify', label: 'Fastify 5', incumbent: '@fastify/rate-limit', target: true },
  { id: 'hono', label: 'Hono on @hono/node-server', incumbent: 'hono-rate-limiter', target: false },
];
const VARIANTS = [
  { id: 'bare', label: 'bare' },
  { id: 'rc', label: 'ratecontract adapter (defaults)' },
  { id: 'rc-advertise', label: "ratecontract adapter, advertise: 'always'" },
  { id: 'rc-check', label: 'ratecontract limiter.check in the handler, no adapter', only: 'node' },
  { id: 'incumbent', label: 'incumbent' },
];

const log = (s) => process.stderr.write(s + '\n');
const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
const int = (x) => Math.round(x).toLocaleString('en-US');
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const machine = {
  node: process.version,
  cpu: os.cpus()[0]?.model ?? 'unknown',
  cores: os.cpus().length,
  memGiB: Math.round(os.totalmem() / 2 ** 30),
  platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  loadgen: await loadgenLabel(),
  date: new Date().toISOString(),
  loadavgStart: os.loadavg().map((x) => Number(x.toFixed(2))),
};
// A private build of src/ for this run (server processes load it through RATECONTRACT_DIST_DIR).
const build = privateBuild(log);
machine.ratecontract = build.revision;

const lines = [];
const print = (s = '') => {
  lines.push(s);
  console.log(s);
};
const t0 = performance.now();
const variantsOf = (f) => VARIANTS.filter((v) => v.only === undefined || v.only === f.id);
const configs = FRAMEWORKS.flatMap((f) => variantsOf(f).map((v) => ({ f, v, key: `${f.id}:${v.id}` })));
const per = Object.fromEntries(configs.map((c) => [c.key, []]));
for (const f of FRAMEWORKS) {
  const own = configs.filter((c) => c.f === f);
  const servers = [];
  try {
    for (const c of own) servers.push({ c, server: await startServer(c.f.id, c.v.id) });
    for (let r = 0; r < rounds; r++) {
      for (const { c, server } of r % 2 === 0 ? servers : [...servers].reverse()) {
        const res = await server.measure(measureS);
        per[c.key].push(res);
        log(
          `  ${f.id} round ${r + 1}/${rounds} ${c.key.padEnd(22)} ${int(res.perSec).padStart(7)} req/s  p50 ${fmt(res.p50Ms)} p99 ${fmt(res.p99Ms)} ms  server ${fmt(res.serverCpuUsPerRequest, 1)} us/req (${fmt(100 * res.serverCpuShare, 0)}% of a core)  non2xx=${res.non2xx} errors=${res.errors}`,
        );
      }
    }
  } finally {
    await Promise.all(servers.map((s) => s.server.stop()));
  }
}

const sum = Object.fromEntries(
  configs.map((c) => {
    const xs = per[c.key];
    const m = (f) => median(xs.map(f));
    return [
      c.key,
      {
        framework: c.f.id,
        variant: c.v.id,
        // Totals over the rounds: every round has the same length, so this is the mean of the rounds' rates.
        perSec: xs.reduce((a, x) => a + x.requests, 0) / xs.reduce((a, x) => a + x.requests / x.perSec, 0),
        p50Ms: m((x) => x.p50Ms),
        p99Ms: m((x) => x.p99Ms),
        cpuUs: xs.reduce((a, x) => a + x.serverCpuUs, 0) / xs.reduce((a, x) => a + x.served, 0),
        cpuShare: m((x) => x.serverCpuShare),
        roundsPerSec: xs.map((x) => x.perSec),
        non2xx: xs.reduce((a, x) => a + x.non2xx, 0),
        errors: xs.reduce((a, x) => a + x.errors, 0),
      },
    ];
  }),
);

print(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, ${machine.platform}; Node ${machine.node}`);
print(`ratecontract: ${machine.ratecontract} (src/ compiled into a private directory for this run)`);
print(`load generator: ${machine.loadgen}, ${CONNECTIONS} keep-alive connections, ${loadgen === 'wrk' ? 'one thread' : ''}; servers kept up per framework, 1 s warm-up each, then ${rounds} rounds of ${measureS} s per server in turn; requests/s and CPU are totals over the rounds, latencies medians`);
print(`load average at start: ${machine.loadavgStart.join(' ')}`);
print();
print(`### HTTP GET / -> 200 "ok", ${CONNECTIONS} connections (${rounds} interleaved rounds of ${measureS} s)`);
print();
const h = '| framework | variant | requests/s | p50 ms | p99 ms | vs bare, same framework | vs incumbent, same framework | server CPU us/request | CPU-based cost vs bare | server busy (share of one core) | non-2xx | errors |';
print(h);
print(`| --- | --- |${' ---: |'.repeat(h.split('|').length - 4)}`);
for (const f of FRAMEWORKS) {
  const bare = sum[`${f.id}:bare`];
  const inc = sum[`${f.id}:incumbent`];
  for (const v of variantsOf(f)) {
    const x = sum[`${f.id}:${v.id}`];
    const label = v.id === 'incumbent' ? f.incumbent : v.label;
    print(
      `| ${f.label} | ${label} | ${int(x.perSec)} | ${fmt(x.p50Ms)} | ${fmt(x.p99Ms)} | ${fmt(x.perSec / bare.perSec)}x | ${fmt(x.perSec / inc.perSec)}x | ${fmt(x.cpuUs, 1)} | ${v.id === 'bare' ? '' : `${x.cpuUs >= bare.cpuUs ? '+' : ''}${fmt(100 * (x.cpuUs / bare.cpuUs - 1), 0)}%`} | ${fmt(100 * x.cpuShare, 0)}% | ${x.non2xx} | ${x.errors} |`,
    );
  }
}

const targets = [];
{
  const b = sum['node:bare'];
  const rc = sum['node:rc'];
  targets.push({ target: 'ratecontract costs <= 10% of bare node:http throughput (requests/s ratio >= 0.90)', value: rc.perSec / b.perSec, goal: 0.9 });
  targets.push({ target: '(same, from server CPU per request: bare / ratecontract >= 0.90)', value: b.cpuUs / rc.cpuUs, goal: 0.9 });
  // Round r of every variant ran back to back: the median of the rounds' own ratios.
  const paired = median(per['node:rc'].map((x, r) => x.perSec / per['node:bare'][r].perSec));
  targets.push({ target: '(same, median of the per-round ratios)', value: paired, goal: 0.9 });
  const ra = sum['node:rc-advertise'];
  targets.push({ target: "(same, advertise: 'always', requests/s ratio)", value: ra.perSec / b.perSec, goal: 0.9 });
  const rcc = sum['node:rc-check'];
  targets.push({ target: '(same, limiter.check without the adapter, requests/s ratio)', value: rcc.perSec / b.perSec, goal: 0.9 });
  for (const f of FRAMEWORKS) {
    const v = sum[`${f.id}:rc`].perSec / sum[`${f.id}:incumbent`].perSec;
    targets.push({ target: `${f.target ? '' : '(not a target) '}ratecontract >= ${f.incumbent} on ${f.label}, requests/s`, value: v, goal: 1 });
    const va = sum[`${f.id}:rc-advertise`].perSec / sum[`${f.id}:incumbent`].perSec;
    targets.push({ target: `${f.target ? '' : '(not a target) '}ratecontract advertise: 'always' >= ${f.incumbent} on ${f.label}, requests/s`, value: va, goal: 1 });
  }
}
print();
print('### Targets (issue 5)');
print();
print('| target | value | met |');
print('| --- | ---: | --- |');
for (const t of targets) print(`| ${t.target} | ${fmt(t.value)}x | ${t.value >= t.goal ? 'yes' : 'NO'} |`);

const elapsedS = (performance.now() - t0) / 1000;
machine.loadavgEnd = os.loadavg().map((x) => Number(x.toFixed(2)));
machine.ratecontractAtEnd = revision();
if (machine.ratecontractAtEnd !== machine.ratecontract) print(`note: the repository moved on during the run (${machine.ratecontractAtEnd} at the end); every measurement used the build of ${machine.ratecontract}.`);
build.cleanup();
print();
print(`elapsed: ${fmt(elapsedS, 0)} s; load average at end: ${machine.loadavgEnd.join(' ')}`);

mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/http-latest.json', import.meta.url), JSON.stringify({ machine, rounds, measureS, connections: CONNECTIONS, results: sum, targets, raw: per, elapsedS }, null, 2) + '\n');
writeFileSync(new URL('./results/http-latest.md', import.meta.url), lines.join('\n') + '\n');
