// Starts a private redis-server for one benchmark run: 127.0.0.1 only, on a
// free port (never 6379), no persistence (--save '' --appendonly no). It runs
// under coreutils `timeout`, so it stops by itself even if the driver dies
// without calling stop().

import { spawn } from 'node:child_process';
import { createConnection, createServer } from 'node:net';

/** A free TCP port on 127.0.0.1, other than 6379. */
export async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const p = s.address().port;
        s.close(() => resolve(p));
      });
    });
    if (port !== 6379) return port;
  }
}

function ping(port) {
  return new Promise((resolve) => {
    const sock = createConnection({ port, host: '127.0.0.1' });
    let buf = '';
    sock.once('error', () => resolve(false));
    sock.on('data', (d) => {
      buf += d;
      if (buf.includes('\r\n')) {
        sock.destroy();
        resolve(buf.startsWith('+PONG'));
      }
    });
    sock.write('PING\r\n');
  });
}

/**
 * Starts redis-server; resolves `{ port, stop }` once it answers PING.
 * `maxSeconds`: the server is killed by `timeout` after this long regardless.
 * `cpu`: the CPU to pin it to (taskset), or undefined for no pinning.
 */
export async function startRedis({ maxSeconds = 600, log = () => {}, cpu } = {}) {
  const port = await freePort();
  // `cpu`: pin redis-server to that CPU (taskset), as the pinned benchmarks do.
  const pin = cpu === undefined ? [] : ['-c', String(cpu), 'timeout'];
  const args = [
    ...pin,
    '--signal=TERM',
    '--kill-after=5',
    String(maxSeconds),
    'redis-server',
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--save', '',
    '--appendonly', 'no',
    '--daemonize', 'no',
    '--loglevel', 'warning',
    '--databases', '1',
  ];
  const child = spawn(cpu === undefined ? 'timeout' : 'taskset', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  let exited = false;
  child.once('exit', () => (exited = true));
  const deadline = Date.now() + 10_000;
  while (!(await ping(port))) {
    if (exited || Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error(`redis-server did not start on port ${port}: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  log(`redis-server on 127.0.0.1:${port} (under timeout, pid ${child.pid}; stops by itself after ${maxSeconds} s)`);
  const stop = () =>
    new Promise((resolve) => {
      if (exited) return resolve();
      child.once('exit', () => resolve());
      // `timeout` forwards TERM to redis-server and SIGKILLs it 5 s later if it is still running.
      child.kill('SIGTERM');
    });
  return { port, stop };
}
