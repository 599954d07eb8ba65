// gRPC ShouldRateLimit calls/s and latency of `ratecontract rls` (memory and
// Redis stores, 1 and 4 descriptors per call) against a bare grpc-js server
// that answers OK and does nothing (bench/rls-bare.js: the protocol ceiling),
// in one run. Each server runs pinned to CPU 0; this load client and
// redis-server share CPU 1. The client keeps CONCURRENCY calls in flight for
// SECONDS per scenario over one channel, keys spread over 1,000 values (the
// throughput), then LATENCY_CONCURRENCY in flight for half as long (the
// latency of a call that does not queue behind others). The rules fail open,
// and the Redis rows count the descriptors that did (a missed 8 ms deadline).
//
//   npm run build && flock /tmp/bench.lock taskset -c 1 node bench/rls.js     (from the repository root)
//
// Env: BENCH_SECONDS (default 5), BENCH_CONCURRENCY (default 32),
// BENCH_LATENCY_CONCURRENCY (default 2). Writes
// bench/results/rls-latest.json and prints a markdown table.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const LATENCY_CONCURRENCY = Number(process.env.BENCH_LATENCY_CONCURRENCY ?? 2);
const KEYS = 1000;

const CONFIG = `domain: bench
descriptors:
${[1, 2, 3, 4].map((i) => `  - key: k${i}\n    rate_limit: { unit: second, requests_per_unit: 1000000000, algorithm: gcra, purpose: shedding, onError: open }`).join('\n')}
`;

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Spawns a child and resolves with the first stdout line `test` accepts (parsed by `pick`). */
function spawnUntil(cmd, args, pick) {
  const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let buf = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      buf += d;
      for (const line of buf.split('\n')) {
        const v = pick(line);
        if (v !== undefined) {
          resolve({ child, value: v });
          return;
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`)));
  });
}

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

async function startRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rc-bench-redis-'));
  const child = spawn('taskset', ['-c', '1', 'redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const ok = await new Promise((resolve) => {
      const p = spawn('redis-cli', ['-p', String(port), 'ping']);
      let out = '';
      p.stdout.on('data', (d) => (out += d));
      p.once('exit', () => resolve(out.trim() === 'PONG'));
    });
    if (ok) return { child, url: `redis://127.0.0.1:${port}` };
  }
  throw new Error('redis-server did not start');
}

const rlsPort = (line) => {
  try {
    const l = JSON.parse(line);
    return l.event === 'startup' ? { port: l.grpcPort, admin: l.adminUrl } : undefined;
  } catch {
    return undefined;
  }
};

async function startServer(kind, configDir, redisUrl) {
  if (kind === 'bare') return spawnUntil('taskset', ['-c', '0', process.execPath, join(HERE, 'rls-bare.js')], (line) => (/^port (\d+)$/.exec(line)?.[1] ? { port: Number(/^port (\d+)$/.exec(line)[1]) } : undefined));
  const args = ['-c', '0', process.execPath, join(ROOT, 'packages', 'cli', 'dist', 'cli', 'main.js'), 'rls', '--config', configDir, '--grpc-port', '0', '--http-port', '0', '--no-watch', '--admin-port', '0', '--log-level', 'info'];
  if (kind === 'redis') args.push('--redis', redisUrl);
  return spawnUntil('taskset', args, rlsPort);
}

function client(port) {
  const def = protoLoader.loadSync(['envoy/service/ratelimit/v3/rls.proto'], { keepCase: true, longs: Number, enums: String, defaults: false, arrays: true, oneofs: true, includeDirs: [join(ROOT, 'packages', 'cli', 'proto')] });
  const pkg = grpc.loadPackageDefinition(def);
  return new pkg.envoy.service.ratelimit.v3.RateLimitService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

function call(c, n, i) {
  const descriptors = [];
  for (let j = 1; j <= n; j++) descriptors.push({ entries: [{ key: `k${j}`, value: String((i * 7919 + j) % KEYS) }] });
  return new Promise((resolve, reject) => c.ShouldRateLimit({ domain: 'bench', descriptors }, { deadline: Date.now() + 10_000 }, (e, r) => (e ? reject(e) : resolve(r))));
}

async function measure(port, n, concurrency, seconds, warm) {
  const c = client(port);
  for (let i = 0; i < warm; i++) await call(c, n, i); // warm-up: connection, JIT, scripts loaded
  const latencies = [];
  let over = 0;
  let errors = 0;
  let i = 0;
  const start = performance.now();
  const until = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        try {
          const r = await call(c, n, i++);
          if (r.overall_code !== 'OK') over++;
        } catch {
          errors++;
        }
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  c.close();
  latencies.sort((a, b) => a - b);
  const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
  return { calls: latencies.length, perSecond: Math.round(latencies.length / elapsed), p50: q(0.5), p99: q(0.99), max: latencies[latencies.length - 1], over, errors };
}

const dir = mkdtempSync(join(tmpdir(), 'rc-bench-rls-'));
writeFileSync(join(dir, 'bench.yaml'), CONFIG);
const redis = await startRedis();
const rows = [];
try {
  for (const kind of ['bare', 'memory', 'redis']) {
    const { child, value } = await startServer(kind, dir, redis.url);
    try {
      for (const n of [1, 4]) {
        const m = await measure(value.port, n, CONCURRENCY, SECONDS, 2000);
        // Latency at low concurrency: each call's own time, not the queue of a saturated closed loop.
        const l = await measure(value.port, n, LATENCY_CONCURRENCY, Math.max(1, SECONDS / 2), 200);
        rows.push({ server: kind, descriptors: n, ...m, latency: { concurrency: LATENCY_CONCURRENCY, perSecond: l.perSecond, p50: l.p50, p99: l.p99, max: l.max } });
        process.stderr.write(`${kind} ${n}: ${m.perSecond}/s p99 ${m.p99.toFixed(2)} ms; at ${LATENCY_CONCURRENCY} in flight p99 ${l.p99.toFixed(2)} ms\n`);
      }
      if (value.admin !== undefined) {
        const text = await (await fetch(`${value.admin}/metrics`)).text();
        const failOpen = Number(/ratecontract_rls_descriptors_total\{result="fail_open"\} (\d+)/.exec(text)?.[1] ?? 0);
        for (const r of rows) if (r.server === kind) r.failOpenDescriptors = failOpen;
      }
    } finally {
      await stop(child);
    }
  }
} finally {
  await stop(redis.child);
}
const ceiling = (n) => rows.find((r) => r.server === 'bare' && r.descriptors === n).perSecond;
const lines = [
  `| server | descriptors per call | calls/s (${CONCURRENCY} in flight) | vs bare grpc-js | p50 / p99 ms (${CONCURRENCY} in flight) | p50 / p99 / max ms (${LATENCY_CONCURRENCY} in flight) | errors | descriptors failed open (run total) |`,
  `| --- | --- | --- | --- | --- | --- | --- | --- |`,
  ...rows.map(
    (r) =>
      `| ${r.server === 'bare' ? 'bare grpc-js (ceiling)' : `ratecontract rls, ${r.server}`} | ${r.descriptors} | ${r.perSecond} | ${(r.perSecond / ceiling(r.descriptors)).toFixed(2)}x | ${r.p50.toFixed(2)} / ${r.p99.toFixed(2)} | ${r.latency.p50.toFixed(2)} / ${r.latency.p99.toFixed(2)} / ${r.latency.max.toFixed(1)} | ${r.errors} | ${r.server === 'bare' ? 'n/a' : String(r.failOpenDescriptors ?? 0)} |`,
  ),
];
mkdirSync(join(HERE, 'results'), { recursive: true });
writeFileSync(join(HERE, 'results', 'rls-latest.json'), JSON.stringify({ date: new Date().toISOString(), seconds: SECONDS, concurrency: CONCURRENCY, rows }, null, 2) + '\n');
process.stdout.write(lines.join('\n') + '\n');
