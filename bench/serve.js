// ratecontract serve --upstream vs the bare upstream, nginx limit_req (one worker) and a plain undici proxy.
// Usage: node bench/serve.js [--duration 5] [--connections 50] [--redis]   (needs wrk; nginx optional; from the repo root after npm run build)
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, d) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? d : args[i + 1];
};
const DURATION = Number(opt('duration', '5'));
const CONNECTIONS = Number(opt('connections', '50'));
const children = new Set();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
const dir = mkdtempSync(join(tmpdir(), 'rc-bench-serve-'));

function start(cmd, argv, ready) {
  const p = spawn('timeout', ['--signal=KILL', '600', cmd, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(p);
  return new Promise((resolve, reject) => {
    let out = '';
    const on = (d) => {
      out += d;
      const m = ready(out);
      if (m) resolve({ p, m });
    };
    p.stdout.on('data', on);
    p.stderr.on('data', on);
    p.once('exit', (code) => reject(new Error(`${cmd} exited ${code}: ${out}`)));
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

function wrk(url) {
  const text = execFileSync('wrk', ['-t1', `-c${CONNECTIONS}`, `-d${DURATION}s`, '--latency', url], { encoding: 'utf8' });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)[1]);
  const p99raw = /99%\s+([\d.]+)(us|ms|s)/.exec(text);
  const p99 = Number(p99raw[1]) * (p99raw[2] === 'us' ? 0.001 : p99raw[2] === 's' ? 1000 : 1);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  return { rps, p99, non2xx };
}

// The upstream: a trivial node:http server in its own process.
const upPort = await freePort();
const upstreamSrc = `require('http').createServer((q,r)=>{r.setHeader('content-type','text/plain');r.end('ok')}).listen(${upPort},'127.0.0.1',()=>console.log('up'))`;
await start(process.execPath, ['-e', upstreamSrc], (o) => o.includes('up'));
const upstream = `http://127.0.0.1:${upPort}`;

// A plain Node proxy with no limiting: undici pool, streamed.
const plainPort = await freePort();
const plainSrc = `const {Pool}=require(${JSON.stringify(join(ROOT, 'node_modules', 'undici'))});const pool=new Pool(${JSON.stringify(upstream)},{connections:128});
require('http').createServer(async(q,r)=>{try{const a=await pool.request({method:q.method,path:q.url,headers:{'x-forwarded-for':q.socket.remoteAddress},body:q.method==='GET'||q.method==='HEAD'?null:q});r.writeHead(a.statusCode,a.headers);a.body.pipe(r)}catch{r.statusCode=502;r.end()}}).listen(${plainPort},'127.0.0.1',()=>console.log('plain'))`;
await start(process.execPath, ['-e', plainSrc], (o) => o.includes('plain'));

// One per-IP limit far above what the benchmark sends, so every request is checked and admitted.
const contract = `limits:
  - { name: per-ip, purpose: shedding, algorithm: gcra, limit: 100000000, window: 1s, key: ip }
routes:
  - { match: 'GET /*', limits: [per-ip] }
`;
writeFileSync(join(dir, 'contract.yaml'), contract);

async function serveProxy(extra) {
  const { m } = await start(process.execPath, [join(ROOT, 'dist', 'cli', 'main.js'), 'serve', '--config', join(dir, 'contract.yaml'), '--upstream', upstream, '--port', '0', '--admin-port', '0', ...extra], (o) => /listening (http:\/\/\S+)/.exec(o));
  return m[1];
}

const rows = [];
const run = (name, url) => {
  wrk(url); // warm-up pass, discarded
  const r = wrk(url);
  rows.push({ name, ...r });
  console.error(`${name}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99.toFixed(2)} ms${r.non2xx ? `, ${r.non2xx} non-2xx` : ''}`);
};

run('bare upstream', `${upstream}/x`);
run('plain undici proxy', `http://127.0.0.1:${plainPort}/x`);
run('ratecontract serve (memory)', `${await serveProxy([])}/x`);

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
  const p = spawn('timeout', ['--signal=KILL', '600', 'nginx', '-c', join(dir, 'nginx.conf'), '-p', dir], { stdio: 'ignore' });
  children.add(p);
  for (let i = 0; i < 50; i++) {
    try {
      execFileSync('curl', ['-s', '-o', '/dev/null', `http://127.0.0.1:${port}/`]);
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  run('nginx limit_req (1 worker)', `http://127.0.0.1:${port}/x`);
}

if (args.includes('--redis')) {
  const rport = await freePort();
  await start('redis-server', ['--port', String(rport), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], (o) => o.includes('Ready to accept'));
  run('ratecontract serve (redis)', `${await serveProxy(['--redis', `redis://127.0.0.1:${rport}`])}/x`);
}

const by = Object.fromEntries(rows.map((r) => [r.name, r]));
const base = by['ratecontract serve (memory)'];
console.log(JSON.stringify({ duration: DURATION, connections: CONNECTIONS, rows }, null, 2));
for (const other of ['bare upstream', 'plain undici proxy', 'nginx limit_req (1 worker)', 'ratecontract serve (redis)']) {
  const o = by[other];
  if (o) console.log(`serve (memory) / ${other}: ${(base.rps / o.rps).toFixed(2)}x req/s, p99 ${(base.p99 / o.p99).toFixed(2)}x`);
}
for (const c of children) c.kill('SIGTERM');
rmSync(dir, { recursive: true, force: true });
process.exit(0);
