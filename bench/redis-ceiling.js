// The ceiling: what redis-benchmark (C, 50 connections) reaches calling a
// script with EVALSHA on the same redis-server, unpipelined (-P 1) and
// pipelined (-P 16), 10,000 random keys (-r). Scripts:
//
//   gcra-min   lua/gcra-min.lua: the smallest equivalent of a one-limit GCRA
//              check (TIME, GET, SET PX), the "equivalent script"
//   chain-1    ratecontract's own chain.lua with the exact ARGV its store
//              sends for the one-limit check (what Redis alone can do with it)
//   chain-4    chain.lua with the ARGV of the four-limit chain
//
// For each run: calls/s and latency percentiles as redis-benchmark reports
// them, and redis-server CPU per call (INFO cpu before and after).

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fromDist } from './dist.js';

const { compileLimits } = await fromDist('index.js');
const { chainScript } = await fromDist('stores/redis/index.js');
// Internal module of the build: the exact ARGV the store sends (bench only).
const { chainArgs } = await fromDist('stores/redis/codec.js');

export const GCRA_MIN = readFileSync(new URL('./lua/gcra-min.lua', import.meta.url), 'utf8');

/** ARGV of chain.lua for `limits` (1 or 4) gcra limits as redis-contenders.js defines them, server time. */
export function chainArgv(limits) {
  const names = ['recipient', 'tenant', 'ip', 'global'].slice(4 - limits);
  const compiled = compileLimits(
    names.map((name) => ({ name, purpose: 'shedding', algorithm: 'gcra', limit: 10, burst: 1e8, window: '1h', key: 'ip' })),
    new Set(),
  );
  return chainArgs(
    compiled.map((limit) => ({ limit, key: 'x', cost: 1, leaseId: undefined })),
    undefined,
    0,
    false,
  );
}

function parseCsv(stdout) {
  const last = stdout.trim().split('\n').pop() ?? '';
  const cells = last.replace(/^"|"$/g, '').split('","');
  const [rps, avg, min, p50, p95, p99, max] = cells.slice(1).map(Number);
  return { rps, avgMs: avg, minMs: min, p50Ms: p50, p95Ms: p95, p99Ms: p99, maxMs: max };
}

export const CEILING_RUNS = [
  { id: 'gcra-min', limits: 1, label: 'gcra-min.lua (equivalent one-limit script)' },
  { id: 'chain-1', limits: 1, label: "ratecontract's chain.lua, one limit" },
  { id: 'chain-4', limits: 4, label: "ratecontract's chain.lua, four limits" },
];

/**
 * Runs one redis-benchmark: `run` from CEILING_RUNS, pipeline depth `P`,
 * `n` calls, 50 clients. `admin` is an ioredis client on the same server.
 */
export async function ceilingOnce(admin, port, run, P, n) {
  const sha = run.id === 'gcra-min' ? await admin.script('LOAD', GCRA_MIN) : await admin.script('LOAD', chainScript.text);
  const keys = Array.from({ length: run.limits }, (_, j) => `ceil${j}:__rand_int__`);
  const args = run.id === 'gcra-min' ? ['360000', String(360000 * 1e8)] : chainArgv(run.limits);
  await admin.flushall();
  const cpu = async () => {
    const t = await admin.info('cpu');
    return Number(/used_cpu_sys:([\d.]+)/.exec(t)[1]) + Number(/used_cpu_user:([\d.]+)/.exec(t)[1]);
  };
  const c0 = await cpu();
  const argv = ['-h', '127.0.0.1', '-p', String(port), '-c', '50', '-n', String(n), '-r', '10000', '-P', String(P), '--csv', 'EVALSHA', sha, String(keys.length), ...keys, ...args];
  const x = spawnSync('redis-benchmark', argv, { encoding: 'utf8', timeout: 120_000, killSignal: 'SIGKILL' });
  const c1 = await cpu();
  if (x.status !== 0 || /ERR|Error/.test(x.stderr)) throw new Error(`redis-benchmark ${run.id} -P ${P} failed (status ${x.status}): ${x.stderr}`);
  return {
    ...parseCsv(x.stdout),
    P,
    n,
    redisCpuUsPerCall: ((c1 - c0) * 1e6) / n,
    command: `redis-benchmark -h 127.0.0.1 -p PORT -c 50 -n ${n} -r 10000 -P ${P} --csv EVALSHA <sha1 of ${run.id === 'gcra-min' ? 'lua/gcra-min.lua' : 'chain.lua'}> ${keys.length} ${keys.join(' ')} ${args.map((a) => (a === '' ? "''" : a)).join(' ')}`,
  };
}
