// nginx + auth_request to `ratecontract decide` against nginx alone, nginx limit_req and `serve --upstream` (issue 24).
// Usage: node bench/decide.js [--duration 5] [--connections 50] [--rounds 3] [--no-redis] [--no-pin] [--decide-args '...']
// (needs wrk, taskset and Debian's nginx; redis-server unless --no-redis; from the repo root after npm run build)
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { children, stopAll, CONNECTIONS, DURATION, flag, freePort, median, opt, PIN, pinned, ROOT, ROUNDS, start, tempDir, wrk } from './pinned-http.js';

const dir = tempDir('rc-bench-decide-');
const MAIN = join(ROOT, 'packages', 'cli', 'dist', 'cli', 'main.js');
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const uptimeBefore = uptime();

// The upstream: a trivial node:http server in its own process, on CPU 1 with wrk (and redis-server).
const upPort = await freePort();
const upstreamSrc = `require('http').createServer((q,r)=>{r.setHeader('content-type','text/plain');r.end('ok')}).listen(${upPort},'127.0.0.1',()=>console.log('up'))`;
await start(process.execPath, ['-e', upstreamSrc], (o) => o.includes('up'), 1);
const upstream = `http://127.0.0.1:${upPort}`;

// One GCRA limit per client address, far above the offered rate: every request is checked and admitted.
const contract = `limits:
  - { name: per-ip, purpose: shedding, algorithm: gcra, limit: 100000000, window: 1s, key: ip }
routes:
  - { match: 'GET /*', limits: [per-ip] }
http:
  trustProxy: loopback
`;
const config = join(dir, 'contract.yaml');
writeFileSync(config, contract);

/** nginx, one worker, pinned to CPU 0, with `body` inside http {}; resolves once it answers. */
async function nginx(name, body) {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(
    join(d, 'nginx.conf'),
    `worker_processes 1; daemon off; pid ${d}/nginx.pid; error_log ${d}/error.log;
events { worker_connections 1024; }
http { access_log off;
  client_body_temp_path ${d}/body; proxy_temp_path ${d}/proxy; fastcgi_temp_path ${d}/fcgi; uwsgi_temp_path ${d}/uwsgi; scgi_temp_path ${d}/scgi;
${body}
}
`,
  );
  const p = spawn(...pinned(0, 'nginx', ['-c', join(d, 'nginx.conf'), '-p', d]), { stdio: 'ignore' });
  children.add(p);
  return p;
}

async function answers(url) {
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      if (r.status === 200) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never answered 200`);
}

const targets = [];
const run = (name, url, pids) => targets.push({ name, url, pids });

// nginx alone: the proxy, no limit.
const alonePort = await freePort();
const alone = await nginx('alone', `  upstream up { server 127.0.0.1:${upPort}; keepalive 128; }
  server { listen 127.0.0.1:${alonePort}; location / { proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://up; } }`);
await answers(`http://127.0.0.1:${alonePort}/x`);
run('nginx alone', `http://127.0.0.1:${alonePort}/x`, { nginx: alone.pid });

// nginx limit_req: its own per-address limit, per worker.
const lrPort = await freePort();
const lr = await nginx('limit-req', `  limit_req_zone $binary_remote_addr zone=perip:10m rate=100000000r/s;
  upstream up { server 127.0.0.1:${upPort}; keepalive 128; }
  server { listen 127.0.0.1:${lrPort}; location / { limit_req zone=perip burst=100000000 nodelay; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://up; } }`);
await answers(`http://127.0.0.1:${lrPort}/x`);
run('nginx limit_req', `http://127.0.0.1:${lrPort}/x`, { nginx: lr.pid });

// nginx + auth_request to decide, with the config decide --emit nginx writes; decide on CPU 0 beside nginx.
const extra = (opt('decide-args', '') ?? '').split(' ').filter(Boolean);
async function withDecide(name, decideArgs) {
  const decidePort = await freePort();
  const listenPort = await freePort();
  const emitted = execFileSync(process.execPath, [MAIN, 'decide', '--config', config, '--emit', 'nginx', '--port', String(decidePort), '--upstream', upstream, '--listen', `127.0.0.1:${listenPort}`], { encoding: 'utf8' });
  const { p: decide } = await start(process.execPath, [MAIN, 'decide', '--config', config, '--port', String(decidePort), '--admin-port', '0', '--deny-status', '403', '--log-level', 'warn', ...decideArgs, ...extra], (o) => /listening http/.test(o), 0);
  const ngx = await nginx(name, emitted);
  await answers(`http://127.0.0.1:${listenPort}/x`);
  run(`nginx + decide (${name})`, `http://127.0.0.1:${listenPort}/x`, { nginx: ngx.pid, decide: decide.pid });
}
await withDecide('memory', []);
let redisUrl;
if (!flag('no-redis')) {
  const rport = await freePort();
  await start('redis-server', ['--port', String(rport), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], (o) => o.includes('Ready to accept'), 1);
  redisUrl = `redis://127.0.0.1:${rport}`;
  await withDecide('redis', ['--redis', redisUrl]);
}

// serve --upstream (memory store), the same contract.
const { p: serve, m } = await start(process.execPath, [MAIN, 'serve', '--config', config, '--upstream', upstream, '--port', '0', '--admin-port', '0', '--log-level', 'warn'], (o) => /listening (http:\/\/\S+)/.exec(o), 0);
run('serve --upstream (memory)', `${m[1]}/x`, { serve: serve.pid });

// Interleaved rounds after one discarded warm-up pass each; a row is the median round.
for (const t of targets) wrk(t.url);
const samples = new Map(targets.map((t) => [t.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const t of targets) {
    const r = wrk(t.url, t.pids);
    samples.get(t.name).push(r);
    const cpu = Object.entries(r.cpuUs).map(([k, v]) => `${k} ${v.toFixed(1)} us`).join(', ');
    console.error(`round ${round + 1} ${t.name}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99.toFixed(2)} ms${r.non2xx ? `, ${r.non2xx} non-2xx` : ''}, CPU/request: ${cpu}`);
  }
}
const rows = targets.map((t) => {
  const s = samples.get(t.name);
  const cpuUs = Object.fromEntries(Object.keys(t.pids).map((k) => [k, median(s.map((r) => r.cpuUs[k]))]));
  return { name: t.name, rps: median(s.map((r) => r.rps)), p99: median(s.map((r) => r.p99)), cpuUs, rounds: s.map((r) => Math.round(r.rps)), non2xx: s.reduce((a, r) => a + r.non2xx, 0) };
});
const by = Object.fromEntries(rows.map((r) => [r.name, r]));
const uptimeAfter = uptime();
console.log(JSON.stringify({ duration: DURATION, connections: CONNECTIONS, rounds: ROUNDS, pinned: PIN, uptimeBefore, uptimeAfter, rows }, null, 2));
const d = by['nginx + decide (memory)'];
const ratio = (a, b) => (a / b).toFixed(2);
console.log(`nginx + decide (memory) / serve --upstream: ${ratio(d.rps, by['serve --upstream (memory)'].rps)}x req/s (target >= 2x)`);
console.log(`nginx + decide (memory) / nginx limit_req: ${ratio(d.rps, by['nginx limit_req'].rps)}x req/s (target >= 0.6x)`);
console.log(`decide CPU per decision (memory): ${d.cpuUs.decide.toFixed(1)} us (target <= 40 us)`);
await stopAll();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
