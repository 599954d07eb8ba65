#!/usr/bin/env node
/**
 * The limiter under load, repeated: a user's process (test/load/fixtures/
 * load-worker.ts: client, store and limiter created as docs/redis.md shows,
 * 50 checks in flight in a closed loop, one GCRA limit over 100 keys) pinned
 * to CPU 0, redis-server pinned to CPU 1. Prints, per run, the decisions made
 * without the store and the check latency quantiles, as a markdown table.
 *
 *   node bench/store-load.js [--runs 3] [--ms 8000]
 *
 * Run from the repository root after `npm ci` (it uses the root's tsx,
 * ioredis and redis). Needs redis-server and taskset.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' }, ms: { type: 'string', default: '8000' } } });
const RUNS = Number(values.runs);
const MS = Number(values.ms);
const PORT = 20000 + Math.floor(Math.random() * 9000);
const dir = mkdtempSync(join(tmpdir(), 'rc-store-load-'));
const redis = spawn('taskset', ['-c', '1', 'timeout', '1800', 'redis-server', '--port', String(PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--enable-debug-command', 'local'], { stdio: 'ignore' });
process.on('exit', () => {
  redis.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cli = (...args) => execFileSync('redis-cli', ['-p', String(PORT), ...args]).toString();
for (let i = 0; i < 100; i++) {
  try {
    if (cli('PING').startsWith('PONG')) break;
  } catch {
    await sleep(50);
  }
}
const pid = Number(/process_id:(\d+)/.exec(cli('INFO', 'server'))[1]);

function worker(args) {
  const child = spawn('taskset', ['-c', '0', process.execPath, '--import', 'tsx', 'test/load/fixtures/load-worker.ts', '--port', String(PORT), '--inflight', '50', ...args]);
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => process.stderr.write(d));
  return new Promise((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop())) : reject(new Error(`worker exit ${code}`)))));
}

function row(scenario, r, extra = '') {
  const off = r.local + r.none;
  console.log(`| ${scenario} | ${r.decisions} | ${off} (${((100 * off) / r.decisions).toFixed(3)}%) | ${r.latencyMs.p50} | ${r.latencyMs.p99} | ${r.latencyMs.p999} | ${r.events.breaker.length} | ${extra} |`);
}

console.log(`redis-server ${cli('INFO', 'server').match(/redis_version:(\S+)/)[1]} on CPU 1, worker on CPU 0, ${MS} ms per run, 50 in flight`);
console.log('');
console.log('| scenario | decisions | without the store | p50 ms | p99 ms | p99.9 ms | breaker transitions | note |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const client of ['ioredis', 'ioredis-failfast', 'node-redis']) {
  for (let run = 1; run <= RUNS; run++) row(`steady, ${client}, run ${run}`, await worker(['--client', client, '--ms', String(MS), '--prefix', `bench-${client}:`]));
}
for (let run = 1; run <= RUNS; run++) {
  const pending = worker(['--client', 'ioredis-failfast', '--ms', String(MS), '--prefix', 'bench-stall:']);
  await sleep(2500);
  process.kill(pid, 'SIGSTOP');
  await sleep(300);
  process.kill(pid, 'SIGCONT');
  const contAt = Date.now();
  const r = await pending;
  const cont = Math.ceil((contAt - r.startedAt) / 100);
  let recovered = -1;
  for (let i = cont; i < r.buckets.length; i++) {
    const [s, o] = r.buckets[i];
    if (s + o > 0 && o <= (s + o) * 0.01) {
      recovered = i;
      break;
    }
  }
  let s = 0;
  let o = 0;
  for (const [a, b] of r.buckets.slice(recovered)) {
    s += a;
    o += b;
  }
  row(`300 ms SIGSTOP, run ${run}`, r, `store decides again ${(recovered - cont) * 100} ms after SIGCONT; ${((100 * o) / (s + o)).toFixed(3)}% local after that`);
}
process.exit(0);
