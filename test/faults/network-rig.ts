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
import type { Slice, WorkerConfig, WorkerReport } from './fixtures/fault-worker.js';

const WORKER = fileURLToPath(new URL('./fixtures/fault-worker.ts', import.meta.url));

export interface NetworkRig {
  readonly redis: RedisServer;
  readonly proxy: FaultProxy;
  /** Wall time (ms) of each connection the proxy accepted. */
  readonly accepts: number[];
  /** Resolves once the worker's store decides (its `ready` line). */
  ready(budgetMs: number): Promise<void>;
  /** Stops the worker's checks and returns its report. */
  report(budgetMs: number): Promise<WorkerReport>;
  /** The worker's stderr so far (for failure messages). */
  stderr(): string;
  stop(): Promise<void>;
}

export async function startRig(config: Omit<WorkerConfig, 'url'>): Promise<NetworkRig> {
  const redis = await startRedis();
  let proxy: FaultProxy | undefined;
  let child: ChildProcess | undefined;
  try {
    proxy = await startFaultProxy({ targetPort: redis.port });
    const accepts: number[] = [];
    const p = proxy;
    const countAccepts = setInterval(() => {
      while (accepts.length < p.accepted) accepts.push(Date.now());
    }, 5);
    countAccepts.unref();
    const worker = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify({ ...config, url: proxy.url })], { stdio: ['pipe', 'pipe', 'pipe'] });
    child = worker;
    let err = '';
    worker.stderr?.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-8000)));
    const lines: string[] = [];
    const waiters: Array<() => void> = [];
    createInterface({ input: worker.stdout as NodeJS.ReadableStream }).on('line', (l) => {
      lines.push(l);
      for (const w of waiters.splice(0)) w();
    });
    const next = (test: (l: string) => boolean, budgetMs: number, what: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`worker: no ${what} within ${budgetMs} ms; stderr: ${err}`)), budgetMs);
        const look = (): void => {
          const found = lines.find(test);
          if (found !== undefined) {
            clearTimeout(timer);
            resolve(found);
          } else waiters.push(look);
        };
        look();
      });
    return {
      redis,
      proxy,
      accepts,
      async ready(budgetMs) {
        await next((l) => l === 'ready', budgetMs, 'ready line');
      },
      async report(budgetMs) {
        worker.stdin?.write('report\n');
        return JSON.parse(await next((l) => l.startsWith('{'), budgetMs, 'report')) as WorkerReport;
      },
      stderr: () => err,
      async stop() {
        clearInterval(countAccepts);
        if (worker.exitCode === null && worker.signalCode === null) {
          const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
          worker.kill('SIGKILL');
          await exited;
        }
        await p.close();
        await redis.stop();
      },
    };
  } catch (error) {
    child?.kill('SIGKILL');
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
