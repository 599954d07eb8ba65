// Speed of `ratecontract replay` against the raw parse speed of the same file (issue 14).
//
//   cd bench && node replay.js [--lines N] [--rounds R]     (default 1,000,000 lines, 3 rounds)
//
// Uses ../dist (run `npm --prefix .. run build` first). Writes one generated
// combined log to a temporary folder, then, per round and each in a fresh
// child process, in turn:
//   parse      readLog() over the file, counting records: reading, gunzip-free
//              line splitting, parsing and the reorder buffer, nothing else;
//   replay     `node ../dist/cli/main.js replay --json` with a one-store contract
//              (every chain decides synchronously);
//   demo       the same with the built-in demo contract (the /otp/send chain
//              spans two stores, so its checks go through a promise);
//   against    the one-store contract --against a looser copy of itself (two
//              contracts per line, one pass).
// Prints the median lines/s of each and its ratio to parse, and writes
// results/replay-latest.json. Asserts nothing.
import { spawnSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, '..', 'packages', 'cli', 'dist');
const bin = join(dist, 'cli', 'main.js');

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

if (process.argv[2] === '--child-parse') {
  const { readLog } = await import(join(dist, 'cli', 'logs.js'));
  const started = process.hrtime.bigint();
  const read = readLog(process.argv[3]);
  let n = 0;
  for await (const r of read.records) if (r.line > 0) n++;
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  process.stdout.write(JSON.stringify({ records: n, lines: read.stats.lines, elapsedMs: ms }) + '\n');
  process.exit(0);
}

const LINES = option('lines', 1_000_000);
const ROUNDS = option('rounds', 3);

const CONTRACT = `limits:
  - { name: login-ip, purpose: abuse, limit: 5, window: 15m, key: ip, reason: guessing }
  - { name: search-user, purpose: shedding, algorithm: sliding-window, limit: 100, window: 1m, key: principal, reason: capacity }
  - { name: search-ip, purpose: shedding, algorithm: token-bucket, limit: 1, window: 10s, burst: 1, key: ip, reason: capacity }
routes:
  - { match: POST /login, limits: [login-ip] }
  - { match: GET /search, limits: [search-user, search-ip] }
  - { match: POST /otp/send, limits: [login-ip] }
  - { match: GET /health, limits: [] }
`;
const LOOSER = CONTRACT.replace('limit: 5, window: 15m', 'limit: 10, window: 15m');

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const p2 = (n) => String(n).padStart(2, '0');
const clf = (ms) => {
  const d = new Date(ms);
  return `${p2(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())} +0000`;
};
const PATHS = ['POST /login', 'GET /search?q=a', 'GET /search?q=b', 'POST /otp/send', 'GET /health', 'GET /missing'];

async function writeLog(path) {
  const out = createWriteStream(path);
  const t0 = Date.UTC(2026, 11, 1, 10);
  let batch = [];
  for (let i = 0; i < LINES; i++) {
    const [method, target] = PATHS[i % PATHS.length].split(' ');
    const ip = `${i % 7 === 0 ? '198.51.100' : '203.0.113'}.${i % 251}`;
    batch.push(`${ip} - ${i % 3 === 0 ? '-' : `user${i % 50}`} [${clf(t0 + Math.floor(i / 100) * 1000)}] "${method} ${target} HTTP/1.1" 200 512 "-" "bench/1.0"`);
    if (batch.length === 10_000) {
      if (!out.write(batch.join('\n') + '\n')) await new Promise((r) => out.once('drain', r));
      batch = [];
    }
  }
  out.end(batch.join('\n') + (batch.length > 0 ? '\n' : ''));
  await new Promise((r) => out.on('finish', r));
}

function child(args) {
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const dir = mkdtempSync(join(tmpdir(), 'rc-bench-replay-'));
try {
  const log = join(dir, 'access.log');
  const contract = join(dir, 'contract.yaml');
  const looser = join(dir, 'looser.yaml');
  writeFileSync(contract, CONTRACT);
  writeFileSync(looser, LOOSER);
  await writeLog(log);
  const runs = { parse: [], replay: [], demo: [], against: [] };
  const rss = { replay: [], demo: [], against: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const p = child([fileURLToPath(import.meta.url), '--child-parse', log]);
    runs.parse.push((p.lines / p.elapsedMs) * 1000);
    for (const [name, extra] of [['replay', ['--config', contract]], ['demo', []], ['against', ['--config', contract, '--against', looser]]]) {
      const r = child([bin, 'replay', ...extra, '--log', log, '--json']);
      runs[name].push((r.log.lines / r.run.elapsedMs) * 1000);
      rss[name].push(r.run.peakRssBytes);
    }
    process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
  }
  const parse = median(runs.parse);
  const rows = Object.entries(runs).map(([name, xs]) => ({
    name,
    linesPerSecond: Math.round(median(xs)),
    ofParse: median(xs) / parse,
    peakRssMiB: rss[name] === undefined ? null : Math.round(median(rss[name]) / 2 ** 20),
  }));
  console.log(`${LINES.toLocaleString('en-US')} combined lines, median of ${ROUNDS} rounds, node ${process.version}`);
  console.log('run       lines/s   of parse  peak RSS');
  for (const r of rows) {
    console.log(`${r.name.padEnd(8)}  ${r.linesPerSecond.toLocaleString('en-US').padStart(9)}  ${(r.ofParse * 100).toFixed(0).padStart(7)}%  ${r.peakRssMiB === null ? '' : `${r.peakRssMiB} MiB`}`);
  }
  await mkdir(join(here, 'results'), { recursive: true });
  await writeFile(join(here, 'results', 'replay-latest.json'), JSON.stringify({ lines: LINES, rounds: ROUNDS, node: process.version, rows, runs }, null, 2) + '\n');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
