// ratecontract serve --upstream vs the bare upstream, nginx limit_req (one worker) and a plain undici proxy.
// Usage: node bench/serve.js [--duration 5] [--connections 50] [--rounds 3] [--redis] [--no-pin] [--compare OTHER_DIST_DIR]   (needs wrk; nginx optional; from the repo root after npm run build)
import { spawn, execFileSync } from 'node:child_process';
import { writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { children, stopAll, CONNECTIONS, DURATION, freePort, median, opt, pinned, ROOT, ROUNDS, start, tempDir, wrk as wrkPass } from './pinned-http.js';

const args = process.argv.slice(2);
const dir = tempDir('rc-bench-serve-');
// One pass; `cpuUs` of the one server under test.
const wrk = (url, pid) => {
  const r = wrkPass(url, pid === undefined ? {} : { server: pid });
  return { ...r, cpuUs: r.cpuUs.server };
};

// The upstream: a trivial node:http server in its own process.
const upPort = await freePort();
const upstreamSrc = `require('http').createServer((q,r)=>{r.setHeader('content-type','text/plain');r.end('ok')}).listen(${upPort},'127.0.0.1',()=>console.log('up'))`;
const upProc = await start(process.execPath, ['-e', upstreamSrc], (o) => o.includes('up'), 1);
const upstream = `http://127.0.0.1:${upPort}`;

// A plain Node proxy with no limiting: undici pool, streamed.
const plainPort = await freePort();
const plainSrc = `const {Pool}=require(${JSON.stringify(join(ROOT, 'node_modules', 'undici'))});const pool=new Pool(${JSON.stringify(upstream)},{connections:128});
require('http').createServer(async(q,r)=>{try{const a=await pool.request({method:q.method,path:q.url,headers:{'x-forwarded-for':q.socket.remoteAddress},body:q.method==='GET'||q.method==='HEAD'?null:q});r.writeHead(a.statusCode,a.headers);a.body.pipe(r)}catch{r.statusCode=502;r.end()}}).listen(${plainPort},'127.0.0.1',()=>console.log('plain'))`;
const plainProc = await start(process.execPath, ['-e', plainSrc], (o) => o.includes('plain'));

// One per-IP limit far above what the benchmark sends, so every request is checked and admitted.
const contract = `limits:
  - { name: per-ip, purpose: shedding, algorithm: gcra, limit: 100000000, window: 1s, key: ip }
routes:
  - { match: 'GET /*', limits: [per-ip] }
`;
writeFileSync(join(dir, 'contract.yaml'), contract);
// The same proxy with the route explicitly unlimited: what serve's proxying costs without the limiter.
writeFileSync(join(dir, 'unlimited.yaml'), contract.replace('limits: [per-ip]', 'limits: []'));

async function serveProxy(extra, dist = join(ROOT, 'packages', 'cli', 'dist'), config = 'contract.yaml') {
  const { p, m } = await start(process.execPath, [join(dist, 'cli', 'main.js'), 'serve', '--config', join(dir, config), '--upstream', upstream, '--port', '0', '--admin-port', '0', ...extra], (o) => /listening (http:\/\/\S+)/.exec(o));
  return { url: m[1], pid: p.pid };
}

// Targets are gathered first, then measured in ROUNDS interleaved rounds (each after a discarded warm-up
// pass); a row is the median round, so a burst of noise from elsewhere on the machine hits every target alike.
const targets = [];
const run = (name, url, pid) => targets.push({ name, url, pid });

run('bare upstream', `${upstream}/x`, upProc.p.pid);
run('plain undici proxy', `http://127.0.0.1:${plainPort}/x`, plainProc.p.pid);
const mem = await serveProxy([]);
run('ratecontract serve (memory)', `${mem.url}/x`, mem.pid);
const unlimited = await serveProxy([], undefined, 'unlimited.yaml');
run('ratecontract serve (route unlimited)', `${unlimited.url}/x`, unlimited.pid);
// --compare DIR: also measure another build's dist/ (an A/B of a change, in the same run).
const compare = opt('compare', undefined);
if (compare !== undefined) {
  const other = await serveProxy([], compare);
  run(`ratecontract serve (memory, ${compare})`, `${other.url}/x`, other.pid);
}

let nginx = false;
try {
  execFileSync('nginx', ['-v'], { stdio: 'ignore' });
  nginx = true;
} catch {
  console.error('nginx not installed: skipped');
}
if (nginx) {
  const port = await freePort();
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections 1024; }
http { access_log off; limit_req_zone $binary_remote_addr zone=perip:10m rate=100000000r/s;
  upstream up { server 127.0.0.1:${upPort}; keepalive 128; }
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  server { listen 127.0.0.1:${port}; location / { limit_req zone=perip burst=100000000 nodelay; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://up; } } }
`,
  );
  const p = spawn(...pinned(0, 'nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir]), { stdio: 'ignore' });
  children.add(p);
  for (let i = 0; i < 50; i++) {
    try {
      execFileSync('curl', ['-s', '-o', '/dev/null', `http://127.0.0.1:${port}/`]);
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  run('nginx limit_req (1 worker)', `http://127.0.0.1:${port}/x`, p.pid);
}

if (args.includes('--redis')) {
  const rport = await freePort();
  await start('redis-server', ['--port', String(rport), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], (o) => o.includes('Ready to accept'), 1);
  const red = await serveProxy(['--redis', `redis://127.0.0.1:${rport}`]);
  run('ratecontract serve (redis)', `${red.url}/x`, red.pid);
}

for (const t of targets) wrk(t.url);
const samples = new Map(targets.map((t) => [t.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const t of targets) {
    const r = wrk(t.url, t.pid);
    samples.get(t.name).push(r);
    console.error(`round ${round + 1} ${t.name}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99.toFixed(2)} ms${r.non2xx ? `, ${r.non2xx} non-2xx` : ''}, ${r.cpuUs?.toFixed(1)} us CPU/request`);
  }
}
const rows = targets.map((t) => {
  const s = samples.get(t.name);
  return { name: t.name, rps: median(s.map((r) => r.rps)), p99: median(s.map((r) => r.p99)), cpuUs: median(s.map((r) => r.cpuUs)), non2xx: s.reduce((a, r) => a + r.non2xx, 0) };
});
const by = Object.fromEntries(rows.map((r) => [r.name, r]));
const base = by['ratecontract serve (memory)'];
console.log(JSON.stringify({ duration: DURATION, connections: CONNECTIONS, rounds: ROUNDS, pinned: PIN, rows }, null, 2));
for (const other of ['bare upstream', 'plain undici proxy', 'ratecontract serve (route unlimited)', 'nginx limit_req (1 worker)', 'ratecontract serve (redis)', `ratecontract serve (memory, ${compare})`]) {
  const o = by[other];
  if (o) console.log(`serve (memory) / ${other}: ${(base.rps / o.rps).toFixed(2)}x req/s, p99 ${(base.p99 / o.p99).toFixed(2)}x, CPU per request ${(base.cpuUs / o.cpuUs).toFixed(2)}x`);
}
await stopAll();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
