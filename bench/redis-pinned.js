// Pinned Redis measurements for redis-otp.js and fleet-sizing.js: the
// redis-server on CPU 1 (redis-server.js, `cpu`), each measurement a fresh
// redis-child.js process on CPU 0, so the client and the server never share
// a core. Children load the private build (dist.js, RATECONTRACT_DIST_DIR).

import { execFileSync, spawnSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

export const CLIENT_CPU = 0;
export const SERVER_CPU = 1;
const child = fileURLToPath(new URL('./redis-child.js', import.meta.url));

/**
 * One measurement of contender `id` against the server on `port`: a fresh
 * process pinned to CLIENT_CPU, `inflight` in flight in a closed loop. `env`
 * is added to the child's environment (e.g. BENCH_BATCH_MAX_CHECKS). Returns
 * redis-child.js's JSON line.
 */
export function measure(id, port, { warmupMs, measureMs, inflight = 50, env = {} }) {
  const x = spawnSync('taskset', ['-c', String(CLIENT_CPU), process.execPath, child, id, String(port), String(warmupMs), String(measureMs), String(inflight)], {
    encoding: 'utf8',
    timeout: warmupMs + measureMs + 60_000,
    killSignal: 'SIGKILL',
    env: { ...process.env, ...env },
  });
  if (x.status !== 0) throw new Error(`redis child ${id} failed (status ${x.status}, signal ${x.signal}): ${x.stderr}`);
  return JSON.parse(x.stdout.trim().split('\n').pop());
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
export const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
export const int = (x) => Math.round(x).toLocaleString('en-US');

/** The machine and the load around a run, for the record. */
export function machine() {
  return {
    node: process.version,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    redis: execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim(),
    date: new Date().toISOString(),
    loadavgStart: os.loadavg().map((x) => Number(x.toFixed(2))),
  };
}

/** Commands per decision from a child's INFO commandstats counts (scripts' own commands included). */
export function perDecision(m, name) {
  return (m.commands[name] ?? 0) / m.decisions;
}
