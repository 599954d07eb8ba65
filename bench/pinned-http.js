// What the pinned HTTP benchmarks (serve.js, decide.js) share: options, pinned child processes that die with the
// run, free ports, a process tree's CPU time from /proc, and a wrk pass with the CPU per request of a process.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
export const flag = (name) => args.includes(`--${name}`);
export const opt = (name, d) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? d : args[i + 1];
};
export const DURATION = Number(opt('duration', '5'));
export const CONNECTIONS = Number(opt('connections', '50'));
export const ROUNDS = Number(opt('rounds', '3'));
export const children = new Set();
// A child is `timeout` running the process: SIGKILL ends `timeout` and orphans what it runs, so this is only for a
// run that dies; a run that ends calls `stopAll`, which lets `timeout` pass SIGTERM on and waits for the exits.
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** SIGTERM to every child (which `timeout` passes on), and wait for them to exit (SIGKILL after 5 s). */
export async function stopAll() {
  await Promise.all(
    [...children].map(
      (c) =>
        new Promise((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const t = setTimeout(() => c.kill('SIGKILL'), 5000);
          c.once('exit', () => {
            clearTimeout(t);
            resolve();
          });
          c.kill('SIGTERM');
        }),
    ),
  );
}
export const tempDir = (prefix) => mkdtempSync(join(tmpdir(), prefix));

// Pinned: the server under test on CPU 0; the upstream, wrk and redis-server on CPU 1 (--no-pin to let them float).
export const PIN = !flag('no-pin');
export const pinned = (cpu, cmd, argv) => (PIN ? ['taskset', ['-c', String(cpu), 'timeout', '--signal=KILL', '600', cmd, ...argv]] : ['timeout', ['--signal=KILL', '600', cmd, ...argv]]);

/** Starts `cmd` pinned to `cpu`; resolves once `ready(output so far)` returns something truthy. */
export function start(cmd, argv, ready, cpu = 0) {
  const p = spawn(...pinned(cpu, cmd, argv), { stdio: ['ignore', 'pipe', 'pipe'] });
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

export function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// CPU seconds (user + system) used so far by a process and its descendants, from /proc (Linux).
export function treeCpu(pid) {
  let ticks = 0;
  const walk = (id) => {
    try {
      const stat = readFileSync(`/proc/${id}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
      for (const t of readdirSync(`/proc/${id}/task`)) {
        for (const c of readFileSync(`/proc/${id}/task/${t}/children`, 'utf8').split(' ').filter(Boolean)) walk(Number(c));
      }
    } catch {
      // gone
    }
  };
  walk(pid);
  return ticks / 100; // USER_HZ
}

/** One wrk pass at `url`; `pids` (name to pid) get their CPU time per request. */
export function wrk(url, pids = {}) {
  const cpu0 = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, treeCpu(pid)]));
  const [cmd, argv] = pinned(1, 'wrk', ['-t1', `-c${CONNECTIONS}`, `-d${DURATION}s`, '--latency', url]);
  const text = execFileSync(cmd, argv, { encoding: 'utf8' });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)[1]);
  const p99raw = /99%\s+([\d.]+)(us|ms|s)/.exec(text);
  const p99 = Number(p99raw[1]) * (p99raw[2] === 'us' ? 0.001 : p99raw[2] === 's' ? 1000 : 1);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  const requests = Number(/(\d+) requests in/.exec(text)[1]);
  // CPU time of each process under test per request: less sensitive than req/s to what else the machine runs.
  const cpuUs = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, ((treeCpu(pid) - cpu0[k]) * 1e6) / requests]));
  return { rps, p99, non2xx, cpuUs };
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
