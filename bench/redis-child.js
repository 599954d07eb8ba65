// One Redis measurement in a fresh process:
//   node redis-child.js <contender> <port> <warmupMs> <measureMs> <inflight>
// FLUSHALL, create the contender (its own client connection), then `inflight`
// concurrent loops each awaiting one request's decision(s) after another
// (closed loop: 50 in flight at all times) for warmupMs + measureMs. Over
// the measurement window it records every completed request's latency
// (performance.now() around the awaited decide), this process's CPU time,
// redis-server's CPU time (INFO cpu) and which commands Redis ran (CONFIG
// RESETSTAT, then INFO commandstats; commands that scripts call count there
// too). Counts what ratecontract publishes on its timeout, store-error,
// fallback, fail-closed and breaker channels. Prints one JSON line and exits.

import { subscribe } from 'node:diagnostics_channel';
import { Redis } from 'ioredis';
import { fromDist } from './dist.js';
import { redisContenders } from './redis-contenders.js';

const { CHANNELS } = await fromDist('index.js');

const [id, portArg, warmupArg = '1000', measureArg = '4000', inflightArg = '50'] = process.argv.slice(2);
const contender = redisContenders[id];
if (contender === undefined || portArg === undefined) {
  console.error(`usage: node redis-child.js <${Object.keys(redisContenders).join('|')}> <port> [warmupMs] [measureMs] [inflight]`);
  process.exit(2);
}
const port = Number(portArg);
const warmupMs = Number(warmupArg);
const measureMs = Number(measureArg);
const inflight = Number(inflightArg);
// Never hang: the parent also kills this process after its own timeout.
setTimeout(() => {
  console.error('redis child: overran its time budget');
  process.exit(3);
}, warmupMs + measureMs + 30_000).unref();

const diag = { timeout: 0, storeError: 0, fallback: 0, failClosed: 0, breaker: 0 };
for (const k of Object.keys(diag)) subscribe(CHANNELS[k], () => diag[k]++);

const admin = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
await admin.connect();
await admin.flushall();

function parseInfo(text) {
  const out = {};
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}
async function redisCpuS() {
  const info = parseInfo(await admin.info('cpu'));
  return Number(info.used_cpu_user) + Number(info.used_cpu_sys);
}
async function commandStats() {
  const info = parseInfo(await admin.info('commandstats'));
  const out = {};
  for (const [k, v] of Object.entries(info)) {
    if (!k.startsWith('cmdstat_')) continue;
    const name = k.slice('cmdstat_'.length);
    if (name === 'info' || name === 'config') continue;
    out[name] = Number(/calls=(\d+)/.exec(v)?.[1] ?? 0);
  }
  return out;
}

const c = await contender.create(port);

const cap = 4_000_000;
const lat = new Float64Array(cap);
let n = 0;
let next = 0;
let errors = 0;
let firstError;
let phase = 'warmup'; // 'warmup' | 'measure' | 'stop'
let windowStart = 0;
let windowEnd = 0;

async function worker() {
  while (phase !== 'stop') {
    const i = next++;
    const t0 = performance.now();
    try {
      await c.decide(i);
    } catch (error) {
      errors++;
      firstError ??= String(error?.stack ?? error);
    }
    if (phase === 'measure') {
      const t1 = performance.now();
      if (n < cap) lat[n] = t1 - t0;
      n++;
    }
  }
}

const workers = Array.from({ length: inflight }, () => worker());
await new Promise((r) => setTimeout(r, warmupMs));
const cpu0 = process.cpuUsage();
const [rcpu0] = await Promise.all([redisCpuS(), admin.config('RESETSTAT')]);
const diag0 = { ...diag };
const fellBack0 = c.fellBack?.() ?? 0;
phase = 'measure';
windowStart = performance.now();
await new Promise((r) => setTimeout(r, measureMs));
phase = 'stop';
windowEnd = performance.now();
const cpu1 = process.cpuUsage(cpu0);
const rcpu1 = await redisCpuS();
const counted = n;
const fellBackInWindow = (c.fellBack?.() ?? 0) - fellBack0;
const stats = await commandStats();
await Promise.all(workers);

const sorted = lat.subarray(0, Math.min(n, cap)).sort();
const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
const seconds = (windowEnd - windowStart) / 1000;
const scripts = (stats.evalsha ?? 0) + (stats.eval ?? 0);
process.stdout.write(
  JSON.stringify({
    id,
    inflight,
    decisions: counted,
    seconds,
    perSec: counted / seconds,
    p50Ms: q(0.5),
    p99Ms: q(0.99),
    maxMs: sorted[sorted.length - 1],
    clientCpuUsPerDecision: (cpu1.user + cpu1.system) / counted,
    redisCpuUsPerDecision: ((rcpu1 - rcpu0) * 1e6) / counted,
    scriptsPerDecision: scripts / counted,
    commands: stats,
    rejected: c.rejected(),
    // Decisions in the measured window that a fail mode made (ratecontract only; null for the others).
    fellBack: c.fellBack === undefined ? null : fellBackInWindow,
    errors,
    firstError,
    diagnostics: diag,
    diagnosticsInWindow: Object.fromEntries(Object.keys(diag).map((k) => [k, diag[k] - diag0[k]])),
  }) + '\n',
);
await Promise.race([Promise.all([c.close(), admin.quit()]), new Promise((r) => setTimeout(r, 2000))]);
process.exit(0);
