// The Redis store over HTTP (ratecontract/redis-http) against the TCP store
// (ratecontract/redis with ioredis) on the same redis-server: decisions/s,
// latency, and the client process's CPU per decision, at 1 and 50 checks in
// flight. The HTTP store talks to redis-http-shim.js (a REST server of the
// Upstash protocol, in its own process, forwarding to the same redis-server
// with ioredis): its hop is a stand-in for a managed endpoint, so the
// latency includes the shim; the client CPU is the store's own cost.
//
//   npm --prefix .. run build && node redis-http.js     (BENCH_MEASURE_MS=3000, BENCH_ROUNDS=2)
//
// Writes results/redis-http-latest.json; records `uptime` before and after.
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { fromDist, revision } from './dist.js';
import { startRedis } from './redis-server.js';

const MEASURE_MS = Number(process.env.BENCH_MEASURE_MS ?? 3000);
const WARM_MS = 1000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

const { createLimiter } = await fromDist('index.js');
const { redisStore } = await fromDist('stores/redis/index.js');
const { redisHttpStore } = await fromDist('stores/redis-http/index.js');

const before = uptime();
const redis = await startRedis({ maxSeconds: 300 });
const io = new Redis({ host: '127.0.0.1', port: redis.port });
const shim = spawn(process.execPath, [new URL('./redis-http-shim.js', import.meta.url).pathname, String(redis.port)], { stdio: ['ignore', 'pipe', 'inherit'] });
const shimPort = await new Promise((resolve) => shim.stdout.once('data', (d) => resolve(JSON.parse(String(d)).port)));

const STORES = {
  tcp: () => redisStore({ client: io, prefix: `bench-tcp:${Date.now()}:`, deadlineMs: 1000 }),
  http: () => redisHttpStore({ url: `http://127.0.0.1:${shimPort}`, token: 'bench', prefix: `bench-http:${Date.now()}:`, deadlineMs: 1000 }),
};

async function measure(name, inFlight) {
  const store = STORES[name]();
  await store.ready();
  const limiter = createLimiter({ defaultStore: store, limits: [{ name: 'l', purpose: 'shedding', algorithm: 'gcra', limit: 1_000_000_000, window: '1s', key: 'principal' }] });
  let phase = 'warm';
  const lat = [];
  let n = 0;
  let failed = 0;
  let stop = false;
  const worker = async (w) => {
    for (let i = 0; !stop; i++) {
      const t0 = performance.now();
      const d = await limiter.check({ principal: `k${(w * 7919 + i) % 1000}` });
      if (phase === 'measure') {
        lat.push(performance.now() - t0);
        n++;
        if (d.outcome !== 'allowed') failed++;
      }
    }
  };
  const running = Array.from({ length: inFlight }, (_, w) => worker(w));
  await new Promise((r) => setTimeout(r, WARM_MS));
  phase = 'measure';
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, MEASURE_MS));
  const cpu = process.cpuUsage(cpu0);
  const elapsed = performance.now() - t0;
  phase = 'done';
  stop = true;
  await Promise.all(running);
  await limiter.close();
  lat.sort((a, b) => a - b);
  const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
  return { store: name, inFlight, decisionsPerSec: Math.round((n / elapsed) * 1000), p50Ms: +q(0.5).toFixed(3), p99Ms: +q(0.99).toFixed(3), clientCpuUsPerDecision: +((cpu.user + cpu.system) / n).toFixed(1), notAllowed: failed };
}

const rows = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const inFlight of [1, 50]) {
    for (const name of round % 2 === 0 ? ['tcp', 'http'] : ['http', 'tcp']) rows.push({ round, ...(await measure(name, inFlight)) });
  }
}
const after = uptime();
shim.kill();
await io.quit();
await redis.stop();

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const summary = [];
for (const inFlight of [1, 50]) {
  for (const name of ['tcp', 'http']) {
    const r = rows.filter((x) => x.store === name && x.inFlight === inFlight);
    summary.push({ store: name, inFlight, decisionsPerSec: median(r.map((x) => x.decisionsPerSec)), p50Ms: median(r.map((x) => x.p50Ms)), p99Ms: median(r.map((x) => x.p99Ms)), clientCpuUsPerDecision: median(r.map((x) => x.clientCpuUsPerDecision)), notAllowed: r.reduce((s, x) => s + x.notAllowed, 0) });
  }
}
const result = { revision: revision(), node: process.version, measureMs: MEASURE_MS, rounds: ROUNDS, uptimeBefore: before, uptimeAfter: after, summary, rows };
writeFileSync(new URL('./results/redis-http-latest.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
console.log(`uptime before: ${before}\nuptime after:  ${after}`);
console.log('| store | in flight | decisions/s | p50 ms | p99 ms | client CPU µs/decision |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const s of summary) console.log(`| ${s.store} | ${s.inFlight} | ${s.decisionsPerSec} | ${s.p50Ms} | ${s.p99Ms} | ${s.clientCpuUsPerDecision} |`);
