/** Helpers for fault tests: clients configured to fail fast, server pause, bounded load with latency. */
import { Redis } from 'ioredis';
import { redisCli, type RedisServer } from '../redis/helpers/redis-server.js';
import type { Decision, Limiter, RequestContext } from '../../src/index.js';

/**
 * An ioredis client set up the way docs/fail-modes.md recommends for a
 * limiter: no offline queue (commands fail at once while disconnected),
 * no per-command retries, no resending after reconnect, quick reconnects.
 */
export async function failFastClient(port: number): Promise<Redis> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: 500,
    retryStrategy: () => 50,
  });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** The redis-server process id (the test helper runs it under `timeout`, so the child pid is not it). */
export async function serverPid(server: RedisServer): Promise<number> {
  const info = await redisCli(server.port, 'INFO', 'server');
  const match = /process_id:(\d+)/.exec(info);
  if (!match) throw new Error('no process_id in INFO server');
  return Number(match[1]);
}

/** Runs `count` checks, `inFlight` at a time; returns every decision and its latency in ms. */
export async function load(
  limiter: Limiter,
  count: number,
  inFlight: number,
  ctx: (i: number) => RequestContext,
): Promise<Array<{ decision: Decision; ms: number; i: number }>> {
  const out: Array<{ decision: Decision; ms: number; i: number }> = [];
  let next = 0;
  async function lane(): Promise<void> {
    while (next < count) {
      const i = next++;
      const started = performance.now();
      const decision = await limiter.check(ctx(i));
      out.push({ decision, ms: performance.now() - started, i });
    }
  }
  await Promise.all(Array.from({ length: inFlight }, lane));
  return out;
}

export function p99(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? 0;
}

/** Polls `test` every 20 ms of real time until it is true or `budgetMs` passes. */
export async function eventually(budgetMs: number, test: () => Promise<boolean>): Promise<boolean> {
  const until = Date.now() + budgetMs;
  while (Date.now() < until) {
    if (await test()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}
