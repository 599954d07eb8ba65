/**
 * Four replica processes share one Redis: together they enforce N. When Redis
 * dies, each falls back to ceil(N/k) with k discovered through heartbeats
 * before the outage, so the fleet still admits about N, not 4N.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../integration/redis/helpers/redis-server.js';
import { serverPid } from './helpers.js';

const WORKER = fileURLToPath(new URL('./fixtures/replica-worker.ts', import.meta.url));
const K = 4;
const N = 40;
const CHECKS = 30;

const children = new Set<ChildProcess>();
let server: RedisServer | undefined;
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await server?.stop();
}, 30_000);

interface Report {
  readonly phase: string;
  readonly admitted: number;
  readonly sources: string[];
  readonly replicas: number;
}

function worker(args: string[]): { child: ChildProcess; next(): Promise<string> } {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const queue: string[] = [];
  const waiters: Array<(line: string) => void> = [];
  lines.on('line', (line) => {
    const w = waiters.shift();
    if (w) w(line);
    else queue.push(line);
  });
  return {
    child,
    next: () =>
      new Promise<string>((resolve, reject) => {
        const line = queue.shift();
        if (line !== undefined) return resolve(line);
        const timer = setTimeout(() => reject(new Error(`worker silent for 30 s: ${err}`)), 30_000);
        waiters.push((l) => {
          clearTimeout(timer);
          resolve(l);
        });
      }),
  };
}

describe('replicas and the degraded fallback', () => {
  it(`${K} processes enforce N=${N} together; after Redis dies each admits ceil(N/k), about N in total`, async () => {
    server = await startRedis();
    const prefix = `rep:${randomBytes(4).toString('hex')}:`;
    const workers = Array.from({ length: K }, () => worker([String(server?.port), prefix, String(N), String(CHECKS), String(K)]));
    const ready = await Promise.all(workers.map((w) => w.next()));
    expect(ready).toEqual(workers.map(() => `ready ${K}`));

    for (const w of workers) w.child.stdin?.write('shared\n');
    const shared = (await Promise.all(workers.map((w) => w.next()))).map((l) => JSON.parse(l) as Report);
    expect(shared.every((r) => r.sources.length === 1 && r.sources[0] === 'store')).toBe(true);
    expect(shared.reduce((a, r) => a + r.admitted, 0)).toBe(N);

    process.kill(await serverPid(server), 'SIGKILL');
    for (const w of workers) w.child.stdin?.write('down\n');
    const down = (await Promise.all(workers.map((w) => w.next()))).map((l) => JSON.parse(l) as Report);
    expect(down.every((r) => r.sources.length === 1 && r.sources[0] === 'local')).toBe(true);
    expect(down.map((r) => r.replicas)).toEqual(workers.map(() => K));
    expect(down.map((r) => r.admitted)).toEqual(workers.map(() => Math.ceil(N / K)));
    expect(down.reduce((a, r) => a + r.admitted, 0)).toBeLessThanOrEqual(K * Math.ceil(N / K));

    for (const w of workers) w.child.stdin?.write('exit\n');
    const codes = await Promise.all(
      workers.map((w) => (w.child.exitCode !== null ? Promise.resolve(w.child.exitCode) : new Promise<number | null>((resolve) => w.child.once('exit', resolve)))),
    );
    expect(codes).toEqual(workers.map(() => 0));
  }, 90_000);
});
