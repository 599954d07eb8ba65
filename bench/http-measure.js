// Measures HTTP servers of http-server.js: a server process on 127.0.0.1,
// warmed by a 1 s run of the load generator, then measured runs, each with
// the server's own CPU time over the run (reported over IPC). Used by
// run-http.js.
//
// Load generator: wrk (C, one thread, 50 keep-alive connections: closed loop,
// 50 requests in flight), from Debian's `wrk` package; if it is not
// installed, autocannon (Node, in the calling process) instead.

import { execFile, execFileSync, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const CONNECTIONS = 50;
const hasWrk = (() => {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (error) {
    return error.status === 1; // `wrk --version` prints its banner and exits 1
  }
})();
export const loadgen = process.env.BENCH_LOADGEN ?? (hasWrk ? 'wrk' : 'autocannon');

/** What the load generator is, for the report. */
export async function loadgenLabel() {
  if (loadgen !== 'wrk') return 'autocannon 9 (in the driver process)';
  const out = await run('wrk', ['--version']).catch((e) => e);
  return (out.stdout ?? '').split('\n')[0].replace(/ Copyright.*$/, '').trim() || 'wrk';
}

const serverFile = fileURLToPath(new URL('./http-server.js', import.meta.url));
const wrkReport = fileURLToPath(new URL('./lua/wrk-report.lua', import.meta.url));

function request(child, msg, key) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`server did not answer ${msg}`)), 10_000);
    const on = (m) => {
      if (m && key in m) {
        clearTimeout(t);
        child.off('message', on);
        resolve(m);
      }
    };
    child.on('message', on);
    if (msg !== undefined) child.send(msg);
  });
}

async function load(port, seconds, measured) {
  const url = `http://127.0.0.1:${port}/`;
  if (loadgen === 'wrk') {
    const args = ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '5s', ...(measured ? ['-s', wrkReport] : []), url];
    const { stdout } = await run('wrk', args, { timeout: (seconds + 20) * 1000, killSignal: 'SIGKILL' });
    if (!measured) return undefined;
    const r = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{')));
    return {
      perSec: r.requests / (r.durationUs / 1e6),
      requests: r.requests,
      p50Ms: r.p50Us / 1000,
      p90Ms: r.p90Us / 1000,
      p99Ms: r.p99Us / 1000,
      maxMs: r.maxUs / 1000,
      non2xx: r.non2xx,
      errors: r.errConnect + r.errRead + r.errWrite + r.errTimeout,
    };
  }
  const { default: autocannon } = await import('autocannon');
  const r = await autocannon({ url, connections: CONNECTIONS, duration: seconds, pipelining: 1 });
  if (!measured) return undefined;
  return {
    perSec: r.requests.total / (r.duration || seconds),
    requests: r.requests.total,
    p50Ms: r.latency.p50,
    p90Ms: r.latency.p90,
    p99Ms: r.latency.p99,
    maxMs: r.latency.max,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

/**
 * Starts one server of http-server.js (`framework`/`variant`) in its own
 * process and warms it with a 1 s run of the load generator. Resolves
 * { measure(seconds), stop() }: `measure` runs the load generator once and
 * resolves { perSec, p50Ms, p99Ms, ..., serverCpuUs, serverCpuUsPerRequest,
 * served, serverCpuShare }, with the server's own CPU time over that run;
 * `stop` ends the process. `env`: extra environment of the server process.
 */
export async function startServer(framework, variant, { env = {} } = {}) {
  const child = fork(serverFile, [framework, variant], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], env: { ...process.env, ...env } });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.connected) child.disconnect();
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  };
  try {
    const { port } = await Promise.race([request(child, undefined, 'port'), exited.then(() => Promise.reject(new Error(`server ${framework}/${variant} exited: ${stderr}`)))]);
    await load(port, 1, false);
    const measure = async (seconds) => {
      await request(child, 'mark', 'marked');
      const res = await load(port, seconds, true);
      const srv = await request(child, 'report', 'cpuUs');
      return { ...res, serverCpuUs: srv.cpuUs, serverCpuUsPerRequest: srv.cpuUs / srv.served, served: srv.served, serverCpuShare: srv.cpuUs / 1000 / srv.ms, rssMiB: srv.rssMiB };
    };
    return { measure, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
