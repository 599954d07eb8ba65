/**
 * No over-admission under concurrency: 4 separate Node processes, each with
 * 50 checks in flight per algorithm against one key, admit exactly N in
 * total for every algorithm (the window is long, so N is the exact answer).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

const WORKER = fileURLToPath(new URL('./fixtures/admit-worker.ts', import.meta.url));
const PROCESSES = 4;
const IN_FLIGHT = 50;
const N = 37;

let server: RedisServer | undefined;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  server = await startRedis();
}, 30_000);

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await server?.stop();
}, 30_000);

interface WorkerReport {
  readonly admitted: Record<string, number>;
  readonly fallbacks: number;
}

function startWorker(args: string[]): { child: ChildProcess; ready: Promise<void>; report: Promise<WorkerReport> } {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  let err = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('ready\n')) onReady();
  });
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const report = new Promise<WorkerReport>((resolve, reject) => {
    child.once('exit', (code) => {
      children.delete(child);
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0) reject(new Error(`worker exited with ${code}: ${err}`));
      else resolve(JSON.parse(last) as WorkerReport);
    });
  });
  return { child, ready: Promise.race([ready, report.then(() => undefined)]), report };
}

describe('no over-admission across processes', () => {
  it(`${PROCESSES} processes x ${IN_FLIGHT} in flight admit exactly N=${N} per algorithm, with ioredis and node-redis`, async () => {
    const port = String((server as RedisServer).port);
    const prefix = `conc:${randomBytes(4).toString('hex')}:`;
    const workers = Array.from({ length: PROCESSES }, (_, i) => startWorker([port, prefix, i % 2 === 0 ? 'ioredis' : 'node-redis', String(N), String(IN_FLIGHT)]));
    await Promise.all(workers.map((w) => w.ready));
    for (const w of workers) w.child.stdin?.write('go\n');
    const reports = await Promise.all(workers.map((w) => w.report));
    expect(reports.map((r) => r.fallbacks)).toEqual(reports.map(() => 0));
    const totals: Record<string, number> = {};
    for (const r of reports) for (const [name, n] of Object.entries(r.admitted)) totals[name] = (totals[name] ?? 0) + n;
    expect(Object.keys(totals)).toHaveLength(8);
    for (const [name, total] of Object.entries(totals)) expect(total, name).toBe(N);
  }, 90_000);
});
