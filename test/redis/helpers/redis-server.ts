/**
 * Starts real redis-server processes for the tests: on free ports (never
 * 6379), in temp dirs, without persistence, each with a hard lifetime (they
 * die on their own even if the test process is killed) and killed when the
 * test process exits.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Hard lifetime of every server (seconds): a leaked server dies by itself. */
const LIFETIME_S = 600;
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A random free port in 20000..29999 whose cluster bus port (+10000) is free too. */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20000 + Math.floor(Math.random() * 10000);
    if ((await portFree(port)) && (await portFree(port + 10000))) return port;
  }
  throw new Error('no free port found');
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ port, host: '127.0.0.1' });
    const done = (ok: boolean): void => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(500, () => done(false));
    s.once('error', () => done(false));
    s.once('connect', () => s.write('PING\r\n'));
    s.once('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

async function waitFor(what: string, budgetMs: number, test: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + budgetMs;
  while (Date.now() < until) {
    if (await test()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out after ${budgetMs} ms waiting for ${what}`);
}

/** Runs redis-cli and returns its stdout. */
export function redisCli(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`redis-cli ${args.join(' ')}: ${error.message} ${stderr}`));
      else resolve(stdout);
    });
  });
}

/** One running redis-server. */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Stops and starts it again on the same port (empty: no persistence). */
  restart(): Promise<void>;
}

/** Options of `startRedis`. */
export interface StartOptions {
  /** Pin the server to this CPU (`taskset -c`), for load figures that depend on scheduling. */
  readonly cpu?: number | undefined;
}

function spawnServer(port: number, dir: string, extra: readonly string[], options: StartOptions): ChildProcess {
  const args = ['--signal=KILL', String(LIFETIME_S), 'redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra];
  const child = options.cpu === undefined ? spawn('timeout', args, { stdio: 'ignore' }) : spawn('taskset', ['-c', String(options.cpu), 'timeout', ...args], { stdio: 'ignore' });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Starts one standalone server (or, with `extra`, any configuration) on a free port. */
export async function startRedis(extra: readonly string[] = [], fixedPort?: number, options: StartOptions = {}): Promise<RedisServer> {
  for (let attempt = 0; ; attempt++) {
    const port = fixedPort ?? (await freePort());
    const dir = mkdtempSync(join(tmpdir(), 'rc-redis-'));
    let child = spawnServer(port, dir, extra, options);
    try {
      await waitFor(`redis-server on port ${port}`, 10_000, async () => {
        if (child.exitCode !== null) throw new Error(`redis-server on port ${port} exited with ${child.exitCode}`);
        return ping(port);
      });
    } catch (error) {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
      if (attempt < 3 && fixedPort === undefined) continue;
      throw error;
    }
    return {
      port,
      url: `redis://127.0.0.1:${port}`,
      async stop() {
        await stopChild(child);
        rmSync(dir, { recursive: true, force: true });
      },
      async restart() {
        await stopChild(child);
        child = spawnServer(port, dir, extra, options);
        await waitFor(`redis-server restart on port ${port}`, 10_000, () => ping(port));
      },
    };
  }
}

/** A running 3-master Redis Cluster. */
export interface RedisClusterServers {
  readonly ports: readonly number[];
  stop(): Promise<void>;
}

/** Starts 3 cluster-enabled servers and joins them with `redis-cli --cluster create`; waits for cluster_state:ok (30 s budget). */
export async function startCluster(): Promise<RedisClusterServers> {
  const nodes: RedisServer[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      nodes.push(await startRedis(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '3000']));
    }
    const ports = nodes.map((n) => n.port);
    await redisCli(ports[0] as number, '--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes');
    await waitFor('cluster_state:ok on every node', 30_000, async () => {
      const infos = await Promise.all(ports.map((p) => redisCli(p, 'cluster', 'info')));
      return infos.every((s) => s.includes('cluster_state:ok'));
    });
    return {
      ports,
      async stop() {
        await Promise.all(nodes.map((n) => n.stop()));
      },
    };
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }
}
