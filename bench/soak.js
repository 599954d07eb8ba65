// A soak (issue 25): the library on Redis, `ratecontract serve --upstream` (Redis store) and `ratecontract rls`
// (Redis store), each at a steady moderate load, side by side for --minutes (default 30). Every --sample-s
// (default 60) each of the three processes reports, through the preloaded bench/soak-probe.mjs: the heap after a
// full collection, RSS, active handles and open file descriptors. At the end it fits a line to each series
// (least squares, after the first --warm samples) and holds the growth it predicts over the run to a bound:
//
//   heap     <= 2 MB + 5% of the series' median      (a leak of one object per request is MBs per minute)
//   RSS      <= 16 MB + 10% of the median            (the allocator returns memory lazily: noisier)
//   handles  <= 2, fds <= 2                          (one per connection or timer that is never closed)
//
// Exit 1 if any is exceeded. Not a test (it takes half an hour); run it on a quiet machine:
//
//   npm run build && taskset -c 1 node bench/soak.js                        (from the repository root; 30 min)
//   taskset -c 1 node bench/soak.js --minutes 3 --sample-s 15 --warm 2     (a short run: proves the harness)
//
// Options: --rate N (checks / requests / calls a second per target, default 500), --no-pin. The targets run
// on CPU 0, redis-server and the upstream on CPU 1 (taskset). Writes bench/results/soak-latest.json.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const args = process.argv.slice(2);
const opt = (name, d) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? d : args[i + 1];
};
const MINUTES = Number(opt('minutes', '30'));
const SAMPLE_MS = Number(opt('sample-s', '60')) * 1000;
const WARM = Number(opt('warm', '3'));
const RATE = Number(opt('rate', '500'));
const PIN = !args.includes('--no-pin');
const LIFETIME_S = String(Math.ceil(MINUTES * 60 + 300));
const CLI = join(ROOT, 'packages', 'cli', 'dist', 'cli', 'main.js');
const dir = mkdtempSync(join(tmpdir(), 'rc-soak-'));

const children = new Set();
const cleanup = () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
};
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));

/** Spawns `cmd` pinned to `cpu`, under a hard lifetime; resolves with the first match of `ready` on its output. */
function start(name, cpu, cmd, argv, ready, env = {}) {
  const wrapped = ['timeout', '--signal=KILL', LIFETIME_S, cmd, ...argv];
  const [c, ...a] = PIN ? ['taskset', '-c', String(cpu), ...wrapped] : wrapped;
  const p = spawn(c, a, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  children.add(p);
  let out = '';
  return new Promise((resolve, reject) => {
    const on = (d) => {
      out = (out + d).slice(-20_000);
      const m = ready(out);
      if (m) resolve({ p, m });
    };
    p.stdout.on('data', on);
    p.stderr.on('data', on);
    p.once('exit', (code) => reject(new Error(`${name} exited ${code}: ${out}`)));
  });
}

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Redis and the upstream on CPU 1.
const redisPort = await freePort();
await start('redis-server', 1, 'redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], (o) => o.includes('Ready to accept'));
const redisUrl = `redis://127.0.0.1:${redisPort}`;
const upPort = await freePort();
await start('upstream', 1, process.execPath, ['-e', `require('http').createServer((q,r)=>r.end('ok')).listen(${upPort},'127.0.0.1',()=>console.log('up'))`], (o) => o.includes('up'));

const probe = (name) => ({ SOAK_PROBE_FILE: join(dir, `${name}.jsonl`), SOAK_PROBE_MS: String(SAMPLE_MS) });
const node = ['--expose-gc', '--import', join(HERE, 'soak-probe.mjs')];

// The three targets on CPU 0.
await start('library', 0, process.execPath, [...node, join(HERE, 'soak-library.js'), redisUrl, String(RATE)], (o) => o.includes('ready'), probe('library'));
writeFileSync(join(dir, 'contract.yaml'), `limits:\n  - { name: per-ip, purpose: shedding, algorithm: gcra, limit: 100000000, window: 1s, key: ip }\nroutes:\n  - { match: 'GET /*', limits: [per-ip] }\n`);
const serve = await start(
  'serve',
  0,
  process.execPath,
  [...node, CLI, 'serve', '--config', join(dir, 'contract.yaml'), '--upstream', `http://127.0.0.1:${upPort}`, '--redis', redisUrl, '--port', '0', '--admin-port', '0'],
  (o) => /listening (http:\/\/\S+)/.exec(o),
  probe('serve'),
);
const serveUrl = serve.m[1];
const rlsDir = join(dir, 'rls');
mkdirSync(rlsDir);
writeFileSync(join(rlsDir, 'soak.yaml'), `domain: soak\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1000000000, algorithm: gcra, purpose: shedding }\n`);
const rls = await start(
  'rls',
  0,
  process.execPath,
  [...node, CLI, 'rls', '--config', rlsDir, '--grpc-port', '0', '--http-port', '0', '--no-watch', '--admin-port', '0', '--redis', redisUrl],
  (o) => {
    for (const line of o.split('\n')) {
      try {
        const l = JSON.parse(line);
        if (l.event === 'startup') return l.grpcPort;
      } catch {
        // not a JSON line
      }
    }
    return undefined;
  },
  probe('rls'),
);
const def = protoLoader.loadSync(['envoy/service/ratelimit/v3/rls.proto'], { keepCase: true, longs: Number, enums: String, defaults: false, arrays: true, oneofs: true, includeDirs: [join(ROOT, 'packages', 'cli', 'proto')] });
const rlsClient = new (grpc.loadPackageDefinition(def).envoy.service.ratelimit.v3.RateLimitService)(`127.0.0.1:${rls.m}`, grpc.credentials.createInsecure());

// Load: RATE a second on serve and on rls, from this process (the library child loads itself).
const stats = { http: { ok: 0, other: 0, errors: 0 }, grpc: { ok: 0, other: 0, errors: 0 } };
let inFlight = 0;
let i = 0;
const load = setInterval(() => {
  for (let n = 0; n < RATE / 100 && inFlight < 500; n++) {
    inFlight += 2;
    fetch(`${serveUrl}/soak/${i % 1000}`)
      .then(async (r) => {
        await r.arrayBuffer();
        stats.http[r.status === 200 ? 'ok' : 'other']++;
      })
      .catch(() => stats.http.errors++)
      .finally(() => inFlight--);
    rlsClient.ShouldRateLimit({ domain: 'soak', descriptors: [{ entries: [{ key: 'k', value: String(i % 1000) }] }] }, { deadline: Date.now() + 5000 }, (e, r) => {
      inFlight--;
      if (e) stats.grpc.errors++;
      else stats.grpc[r.overall_code === 'OK' ? 'ok' : 'other']++;
    });
    i++;
  }
}, 10);

const startedAt = Date.now();
process.stderr.write(`soak: ${MINUTES} min at ${RATE}/s per target, samples every ${SAMPLE_MS / 1000} s\n`);
while (Date.now() - startedAt < MINUTES * 60_000) {
  await sleep(Math.min(SAMPLE_MS, MINUTES * 60_000 - (Date.now() - startedAt)));
  process.stderr.write(`  ${((Date.now() - startedAt) / 60_000).toFixed(1)} min: ${JSON.stringify(stats)}\n`);
}
clearInterval(load);
await sleep(500);
rlsClient.close();

/** Least-squares slope of y over t (per minute). */
function slope(points) {
  const n = points.length;
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const num = points.reduce((a, p) => a + (p.t - mt) * (p.y - my), 0);
  const den = points.reduce((a, p) => a + (p.t - mt) ** 2, 0);
  return den === 0 ? 0 : (num / den) * 60_000;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const BOUNDS = {
  heapUsed: (m) => 2 * 2 ** 20 + 0.05 * m,
  rss: (m) => 16 * 2 ** 20 + 0.1 * m,
  handles: () => 2,
  fds: () => 2,
};
const rows = [];
let failed = false;
for (const target of ['library', 'serve', 'rls']) {
  let samples = [];
  try {
    samples = readFileSync(join(dir, `${target}.jsonl`), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  } catch {
    // no samples
  }
  const used = samples.slice(WARM);
  if (used.length < 3) {
    rows.push({ target, error: `only ${samples.length} samples (need ${WARM + 3})` });
    failed = true;
    continue;
  }
  const minutes = (used[used.length - 1].t - used[0].t) / 60_000;
  const row = { target, samples: samples.length, used: used.length, minutes: Number(minutes.toFixed(2)) };
  for (const k of Object.keys(BOUNDS)) {
    const ys = used.map((s) => s[k]);
    const m = median(ys);
    const perMin = slope(used.map((s) => ({ t: s.t, y: s[k] })));
    const growth = perMin * minutes;
    const bound = BOUNDS[k](m);
    const ok = growth <= bound;
    if (!ok) failed = true;
    row[k] = { first: ys[0], last: ys[ys.length - 1], median: m, perMin: Number(perMin.toFixed(2)), growth: Math.round(growth), bound: Math.round(bound), ok };
  }
  rows.push(row);
}
const mb = (x) => (x / 2 ** 20).toFixed(2);
const fmt = (k, v) => (k === 'heapUsed' || k === 'rss' ? `${mb(v.median)} MB, ${v.perMin >= 0 ? '+' : ''}${mb(v.perMin)} MB/min, growth ${mb(v.growth)} <= ${mb(v.bound)}` : `${v.median}, ${v.perMin >= 0 ? '+' : ''}${v.perMin}/min, growth ${v.growth} <= ${v.bound}`);
const lines = [
  `| target | samples used | heap after gc | RSS | active handles | fds |`,
  `| --- | --- | --- | --- | --- | --- |`,
  ...rows.map((r) => (r.error ? `| ${r.target} | ${r.error} | | | | |` : `| ${r.target} | ${r.used} over ${r.minutes} min | ${['heapUsed', 'rss', 'handles', 'fds'].map((k) => `${fmt(k, r[k])}${r[k].ok ? '' : ' **over**'}`).join(' | ')} |`)),
];
mkdirSync(join(HERE, 'results'), { recursive: true });
writeFileSync(join(HERE, 'results', 'soak-latest.json'), JSON.stringify({ date: new Date().toISOString(), minutes: MINUTES, sampleS: SAMPLE_MS / 1000, rate: RATE, load: stats, rows }, null, 2) + '\n');
process.stdout.write(`load: ${JSON.stringify(stats)}\n${lines.join('\n')}\n`);
process.exit(failed ? 1 : 0);
