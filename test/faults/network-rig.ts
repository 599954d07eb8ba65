/**
 * The rig of the network-fault tests: a redis-server of the test's own, the
 * fault proxy in front of it, and the user's process (fixtures/fault-worker.ts)
 * talking to Redis through the proxy. The test injects faults at the proxy,
 * marking them in wall time; the worker reports what its checks saw, in
 * 100 ms slices of the same clock. `stop()` kills everything, whatever state
 * the test left it in.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startRedis, type RedisServer } from '../integration/redis/helpers/redis-server.js';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';
import type { Netns } from './netns.js';
import type { HeapSample, Slice, WorkerConfig, WorkerReport } from './fixtures/fault-worker.js';

const WORKER = fileURLToPath(new URL('./fixtures/fault-worker.ts', import.meta.url));

/** The user's process, spawned: its lines, its report, its heap samples. */
export interface WorkerHandle {
  /** Resolves once the worker's store decides (its `ready` line). */
  ready(budgetMs: number): Promise<void>;
  /** The heap after a full collection and the active handles, now (the checks go on). */
  sample(budgetMs: number): Promise<HeapSample>;
  /** Stops the worker's checks and returns its report. */
  report(budgetMs: number): Promise<WorkerReport>;
  /** The worker's stderr so far (for failure messages). */
  stderr(): string;
  /** Kills the worker if it still runs. */
  kill(): Promise<void>;
  /** Writes a command line to the worker's stdin. */
  send(line: string): void;
  /** The next line the worker prints that starts with `prefix` (within `budgetMs`). */
  line(prefix: string, budgetMs: number): Promise<string>;
}

export interface NetworkRig extends WorkerHandle {
  readonly redis: RedisServer;
  readonly proxy: FaultProxy;
  /** Wall time (ms) of each connection the proxy accepted. */
  readonly accepts: number[];
  stop(): Promise<void>;
}

/** Options of the rigs. */
export interface RigOptions {
  /** Pin the worker to CPU 0 and redis-server to CPU 1 (`taskset`), as the load tests do. Default true. */
  readonly pin?: boolean | undefined;
}

const WORKER_CPU = 0;
const REDIS_CPU = 1;

/**
 * Spawns the worker with `config` through `launch` (a command and its
 * arguments before node's: `taskset`, `ip netns exec`), with `--expose-gc`
 * so it can sample the heap after a collection.
 */
export function spawnWorker(config: WorkerConfig | object, launch: readonly string[] = [], script = WORKER): WorkerHandle {
  const argv = ['--expose-gc', '--import', 'tsx', script, JSON.stringify(config)];
  const [cmd, ...pre] = launch.length > 0 ? [...launch, process.execPath] : [process.execPath];
  const worker = spawn(cmd, [...pre, ...argv], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  worker.stderr?.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-8000)));
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  createInterface({ input: worker.stdout as NodeJS.ReadableStream }).on('line', (l) => {
    lines.push(l);
    for (const w of waiters.splice(0)) w();
  });
  /** The first line (not taken before) that passes `test`. */
  const next = (test: (l: string) => boolean, budgetMs: number, what: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker: no ${what} within ${budgetMs} ms; stderr: ${err}`)), budgetMs);
      const look = (): void => {
        const i = lines.findIndex(test);
        if (i >= 0) {
          clearTimeout(timer);
          resolve(lines.splice(i, 1)[0] as string);
        } else waiters.push(look);
      };
      look();
    });
  return {
    async ready(budgetMs) {
      await next((l) => l === 'ready', budgetMs, 'ready line');
    },
    async sample(budgetMs) {
      worker.stdin?.write('sample\n');
      return (JSON.parse(await next((l) => l.startsWith('{"sample"'), budgetMs, 'sample')) as { sample: HeapSample }).sample;
    },
    async report(budgetMs) {
      worker.stdin?.write('report\n');
      return JSON.parse(await next((l) => l.startsWith('{"slices"'), budgetMs, 'report')) as WorkerReport;
    },
    stderr: () => err,
    send: (line) => void worker.stdin?.write(`${line}\n`),
    line: (prefix, budgetMs) => next((l) => l.startsWith(prefix), budgetMs, `line starting ${prefix}`),
    async kill() {
      if (worker.exitCode === null && worker.signalCode === null) {
        const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
        worker.kill('SIGKILL');
        await exited;
      }
    },
  };
}

export async function startRig(config: Omit<WorkerConfig, 'url'>, options: RigOptions = {}): Promise<NetworkRig> {
  const pin = options.pin ?? true;
  const redis = await startRedis([], undefined, { cpu: pin ? REDIS_CPU : undefined });
  let proxy: FaultProxy | undefined;
  let worker: WorkerHandle | undefined;
  try {
    proxy = await startFaultProxy({ targetPort: redis.port });
    const accepts: number[] = [];
    const p = proxy;
    const countAccepts = setInterval(() => {
      while (accepts.length < p.accepted) accepts.push(Date.now());
    }, 5);
    countAccepts.unref();
    const w = spawnWorker({ ...config, url: proxy.url }, pin ? ['taskset', '-c', String(WORKER_CPU)] : []);
    worker = w;
    return {
      ...w,
      redis,
      proxy,
      accepts,
      async stop() {
        clearInterval(countAccepts);
        await w.kill();
        await p.close();
        await redis.stop();
      },
    };
  } catch (error) {
    await worker?.kill();
    await proxy?.close();
    await redis.stop();
    throw error;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The slices whose start lies in [from, to). */
export function between(slices: readonly Slice[], from: number, to: number): Slice[] {
  return slices.filter((s) => s.t >= from && s.t < to);
}

/** Checks decided by the store (both limits) over all checks, in `slices`. */
export function storeShare(slices: readonly Slice[]): number {
  const n = slices.reduce((a, s) => a + s.n, 0);
  return n === 0 ? 0 : slices.reduce((a, s) => a + s.store, 0) / n;
}

/**
 * Start of the first slice at or after `from` (and before `to`) in which the
 * store decided at least `share` of the checks (the issue's measure: "the
 * store decided 90% of a 100 ms slice again"), or undefined.
 */
export function backFrom(slices: readonly Slice[], from: number, to: number, share = 0.9): number | undefined {
  return between(slices, from, to).find((s) => s.n > 0 && s.store >= share * s.n)?.t;
}

/** A compact view of slices for failure messages: `t:store/n`, and `~stall` where the event loop stalled over 10 ms. */
export function timeline(slices: readonly Slice[], origin: number): string {
  return slices.map((s) => `${Math.round(s.t - origin)}:${s.store}/${s.n}${s.stallMs > 10 ? `~${Math.round(s.stallMs)}` : ''}`).join(' ');
}

/** A redis-server inside a namespace: its port on the namespace's loopback, and redis-cli run there. */
export interface NetnsRedis {
  readonly port: number;
  cli(...args: string[]): string;
  /** Stops it (SIGTERM, then SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Stops it and starts it again on the same port, empty (no persistence). */
  restart(): Promise<void>;
}

/** Starts redis-server inside `ns` on `port` (any port: the namespace is the test's own), pinned to `cpu` if given. */
export async function startNetnsRedis(ns: Netns, port: number, extra: readonly string[] = [], cpu?: number): Promise<NetnsRedis> {
  const dir = ns.tempDir();
  const start = (): ChildProcess =>
    ns.spawn('timeout', ['--signal=KILL', '600', 'redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra], { cpu });
  const cli = (...args: string[]): string => ns.execSync('redis-cli', ['-p', String(port), ...args]);
  const up = async (): Promise<void> => {
    const until = Date.now() + 10_000;
    for (;;) {
      try {
        if (cli('PING').trim() === 'PONG') return;
      } catch {
        // not yet
      }
      if (Date.now() > until) throw new Error(`redis-server in ${ns.name} on port ${port} did not start`);
      await sleep(50);
    }
  };
  const down = (c: ChildProcess): Promise<void> => {
    if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const kill = setTimeout(() => c.pid !== undefined && process.kill(-c.pid, 'SIGKILL'), 5000);
      c.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      if (c.pid !== undefined) process.kill(-c.pid, 'SIGTERM');
    });
  };
  let child = start();
  await up();
  return {
    port,
    cli,
    stop: () => down(child),
    async restart() {
      await down(child);
      child = start();
      await up();
    },
  };
}

export interface NetnsRig extends WorkerHandle {
  readonly ns: Netns;
  readonly redis: NetnsRedis;
  stop(): Promise<void>;
}

/**
 * The rig in a namespace of its own: redis-server (CPU 1) and the worker
 * (CPU 0) inside `ns`, talking over its loopback, where `ns.partition` and
 * `ns.loss` act. `stop()` kills both; the caller removes the namespace.
 */
export async function startNetnsRig(ns: Netns, config: Omit<WorkerConfig, 'url'>, options: RigOptions = {}): Promise<NetnsRig> {
  const pin = options.pin ?? true;
  const redis = await startNetnsRedis(ns, 7000, [], pin ? REDIS_CPU : undefined);
  const launch = ['ip', 'netns', 'exec', ns.name, ...(pin ? ['taskset', '-c', String(WORKER_CPU)] : [])];
  const w = spawnWorker({ ...config, url: `redis://127.0.0.1:${redis.port}` }, launch);
  return {
    ...w,
    ns,
    redis,
    async stop() {
      await w.kill();
      await redis.stop();
    },
  };
}

/** A 3-master Redis Cluster inside a namespace (no replicas): ports, and redis-cli run there. */
export interface NetnsCluster {
  readonly ports: readonly number[];
  cli(port: number, ...args: string[]): string;
  stop(): Promise<void>;
}

/**
 * Starts 3 cluster-enabled masters inside `ns` on `ports` (their bus ports
 * are port + 10000) and joins them with `redis-cli --cluster create`; waits
 * for cluster_state:ok on every node (30 s). `nodeTimeoutMs` is
 * `cluster-node-timeout` (the test partitions clients from a master, not the
 * bus, so no failover happens either way).
 */
export async function startNetnsCluster(ns: Netns, ports: readonly number[], cpu?: number, nodeTimeoutMs = 5000): Promise<NetnsCluster> {
  const servers: NetnsRedis[] = [];
  try {
    for (const port of ports) {
      servers.push(await startNetnsRedis(ns, port, ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', String(nodeTimeoutMs)], cpu));
    }
    const cli = (port: number, ...args: string[]): string => ns.execSync('redis-cli', ['-p', String(port), ...args]);
    ns.execSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    const until = Date.now() + 30_000;
    while (!ports.every((p) => cli(p, 'cluster', 'info').includes('cluster_state:ok'))) {
      if (Date.now() > until) throw new Error('cluster in the namespace never reached cluster_state:ok');
      await sleep(100);
    }
    return {
      ports,
      cli,
      async stop() {
        await Promise.all(servers.map((x) => x.stop()));
      },
    };
  } catch (error) {
    await Promise.all(servers.map((x) => x.stop()));
    throw error;
  }
}

/** The slot ranges each master serves, from `CLUSTER NODES`, as [first, last, port of the master]. */
export function slotRanges(cluster: NetnsCluster, askPort = cluster.ports[0] as number): Array<[number, number, number]> {
  const ranges: Array<[number, number, number]> = [];
  for (const line of cluster.cli(askPort, 'cluster', 'nodes').split('\n')) {
    const f = line.trim().split(' ');
    if (!(f[2] ?? '').includes('master')) continue;
    const port = Number(/:(\d+)@/.exec(f[1] ?? '')?.[1]);
    for (const r of f.slice(8)) {
      const m = /^(\d+)(?:-(\d+))?$/.exec(r);
      if (m !== null) ranges.push([Number(m[1]), Number(m[2] ?? m[1]), port]);
    }
  }
  return ranges;
}

/** The master's port serving `slot`. */
export function masterOf(ranges: ReadonlyArray<readonly [number, number, number]>, slot: number): number {
  const r = ranges.find(([a, b]) => slot >= a && slot <= b);
  if (r === undefined) throw new Error(`slot ${slot} not served`);
  return r[2];
}
