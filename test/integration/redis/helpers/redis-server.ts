/**
 * Starts real redis-server processes for the tests: on free ports (never
 * 6379), in temp dirs, without persistence, each with a hard lifetime (they
 * die on their own even if the test process is killed) and killed when the
 * test process exits.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { pinnedArgv } from '../../../helpers/pinned.js';
import { join } from 'node:path';

/**
 * Which server the tests start: `RC_REDIS_IMPL=valkey` runs them against
 * Valkey (valkey-server, valkey-cli, valkey-sentinel: `npm run test:valkey`,
 * scripts/ensure-valkey.sh installs them); unset or `redis`, Redis.
 */
export const SERVER_IMPL = serverImpl(process.env.RC_REDIS_IMPL);
const SERVER_BIN = `${SERVER_IMPL}-server`;
const CLI_BIN = `${SERVER_IMPL}-cli`;
const SENTINEL_BIN = `${SERVER_IMPL}-sentinel`;

function serverImpl(v: string | undefined): 'redis' | 'valkey' {
  if (v === undefined || v === '' || v === 'redis') return 'redis';
  if (v === 'valkey') return 'valkey';
  throw new Error(`RC_REDIS_IMPL must be 'redis' or 'valkey', got ${JSON.stringify(v)}`);
}

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
    execFile(CLI_BIN, ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
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
  /** Pin the server to this CPU (`taskset -c`, at a raised priority as root: test/helpers/pinned.ts), for load figures that depend on scheduling. */
  readonly cpu?: number | undefined;
}

function spawnServer(port: number, dir: string, extra: readonly string[], options: StartOptions): ChildProcess {
  const args = ['--signal=KILL', String(LIFETIME_S), SERVER_BIN, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra];
  const [command, ...argv] = pinnedArgv(options.cpu, 'timeout', args);
  const child = spawn(command, argv, { stdio: 'ignore' });
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
        if (child.exitCode !== null) throw new Error(`${SERVER_BIN} on port ${port} exited with ${child.exitCode}`);
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

/** A running 3-master Redis Cluster (with `replicas`, one replica per master). */
export interface RedisClusterServers {
  /** Every node's port: the 3 masters first (as created), then the replicas. */
  readonly ports: readonly number[];
  /** Each node's server, in `ports` order (to kill one: `serverPid`, or `stop()`). */
  readonly nodes: readonly RedisServer[];
  stop(): Promise<void>;
}

/** Options of `startCluster`. */
export interface ClusterOptions {
  /** Replicas per master (0 or 1). Default 0. */
  readonly replicas?: 0 | 1 | undefined;
  /** `cluster-node-timeout`, ms: how long a node may be unreachable before it is failed over. Default 3000. */
  readonly nodeTimeoutMs?: number | undefined;
}

/**
 * Starts 3 cluster-enabled masters (and, with `replicas: 1`, one replica
 * each) and joins them with `redis-cli --cluster create`; waits for
 * cluster_state:ok and, with replicas, for every replica's link to its
 * master (30 s budget).
 */
export async function startCluster(options: ClusterOptions = {}): Promise<RedisClusterServers> {
  const replicas = options.replicas ?? 0;
  const timeout = String(options.nodeTimeoutMs ?? 3000);
  const nodes: RedisServer[] = [];
  try {
    const count = 3 * (1 + replicas);
    for (let i = 0; i < count; i++) {
      nodes.push(await startRedis(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', timeout]));
    }
    const ports = nodes.map((n) => n.port);
    await redisCli(ports[0] as number, '--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes');
    await waitFor('cluster_state:ok on every node', 30_000, async () => {
      const infos = await Promise.all(ports.map((p) => redisCli(p, 'cluster', 'info')));
      return infos.every((s) => s.includes('cluster_state:ok'));
    });
    if (replicas > 0) {
      await waitFor('every replica in sync with its master', 30_000, async () => {
        const roles = await Promise.all(ports.map((p) => redisCli(p, 'info', 'replication')));
        const replicasUp = roles.filter((r) => r.includes('role:slave') && r.includes('master_link_status:up')).length;
        return replicasUp === 3;
      });
    }
    return {
      ports,
      nodes,
      async stop() {
        await Promise.all(nodes.map((n) => n.stop()));
      },
    };
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }
}

/** A master, one replica and three Sentinels watching them as `name`. */
export interface SentinelServers {
  readonly name: string;
  readonly master: RedisServer;
  readonly replica: RedisServer;
  /** The Sentinels' ports. */
  readonly sentinels: readonly number[];
  stop(): Promise<void>;
}

/**
 * Starts a master, a replica of it, and three `redis-sentinel` processes
 * (quorum 2) with a short `down-after-milliseconds`, on free ports; waits
 * until the replica is in sync and every Sentinel knows the other two and
 * the replica (30 s budget). Each Sentinel has the servers' hard lifetime.
 */
export async function startSentinels(options: { readonly downAfterMs?: number | undefined } = {}): Promise<SentinelServers> {
  const name = 'rcmaster';
  const started: Array<{ stop(): Promise<void> }> = [];
  try {
    const master = await startRedis();
    started.push(master);
    const replica = await startRedis(['--replicaof', '127.0.0.1', String(master.port)]);
    started.push(replica);
    await waitFor('the replica in sync', 30_000, async () => (await redisCli(replica.port, 'info', 'replication')).includes('master_link_status:up'));
    const sentinels: number[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'rc-sentinel-'));
      const conf = join(dir, 'sentinel.conf');
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${master.port} 2`,
          `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 1000}`,
          `sentinel failover-timeout ${name} 5000`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      const child = spawn('timeout', ['--signal=KILL', String(LIFETIME_S), SENTINEL_BIN, conf], { stdio: 'ignore' });
      live.add(child);
      child.once('exit', () => live.delete(child));
      started.push({
        async stop() {
          await stopChild(child);
          rmSync(dir, { recursive: true, force: true });
        },
      });
      await waitFor(`redis-sentinel on port ${port}`, 10_000, () => ping(port));
      sentinels.push(port);
    }
    await waitFor('every Sentinel sees the replica and the other Sentinels', 30_000, async () => {
      const views = await Promise.all(sentinels.map((p) => redisCli(p, 'sentinel', 'master', name)));
      return views.every((v) => /num-slaves\s+1\b/.test(v) && /num-other-sentinels\s+2\b/.test(v));
    });
    return {
      name,
      master,
      replica,
      sentinels,
      async stop() {
        await Promise.all(started.map((s) => s.stop()));
      },
    };
  } catch (error) {
    await Promise.all(started.map((s) => s.stop()));
    throw error;
  }
}
