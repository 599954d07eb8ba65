/**
 * Server time: two limiters whose clocks differ by 30 s, sharing one Redis,
 * make identical decisions (they decide at the server's clock, not theirs).
 * The control: in client-time mode the same skew changes decisions.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type AlgorithmName, type Clock, type Decision, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { useStandaloneIoredis } from './helpers/clients.js';

const ioredis = useStandaloneIoredis({ beforeAll, afterAll });

const SKEW_MS = 30_000;
const real: Clock = { now: () => Date.now() };
const ahead: Clock = { now: () => Date.now() + SKEW_MS };

function limitFor(algorithm: AlgorithmName): LimitDefinition {
  // Epoch-aligned windows are long so that no boundary passes during the test.
  const aligned = algorithm === 'fixed-window' || algorithm === 'sliding-window';
  return { name: `skew-${algorithm}`, purpose: 'shedding', algorithm, limit: 4, window: aligned ? 1e9 : 60_000, key: 'global' };
}

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'];

describe('clock skew between replicas', () => {
  it.each(ALGORITHMS)('%s: limiters 30 s apart decide identically in server-time mode', async (algorithm) => {
    const prefix = `skew:${randomBytes(4).toString('hex')}:`;
    const mk = (clock: Clock) => createLimiter({ limits: [limitFor(algorithm)], defaultStore: redisStore({ client: ioredis().client, prefix, deadlineMs: 2000 }), clock });
    const a = mk(real);
    const b = mk(ahead);
    const seen: Array<{ d: Decision; sent: number; done: number }> = [];
    for (let i = 0; i < 8; i++) {
      const sent = Date.now();
      seen.push({ d: await (i % 2 === 0 ? a : b).check({}), sent, done: Date.now() });
    }
    expect(seen.map((s) => s.d.allowed)).toEqual([true, true, true, true, false, false, false, false]);
    expect(seen.map((s) => s.d.results[0]?.remaining)).toEqual([3, 2, 1, 0, 0, 0, 0, 0]);
    expect(seen.every((s) => s.d.results[0]?.source === 'store')).toBe(true);
    // Consecutive rejections by A and by B name the same retry instant: the waits differ by no more
    // than the real time that can separate the two server decisions.
    for (let i = 5; i < 8; i++) {
      const prev = seen[i - 1] as (typeof seen)[number];
      const cur = seen[i] as (typeof seen)[number];
      const drift = prev.d.retryAfterMs - cur.d.retryAfterMs;
      expect(drift).toBeGreaterThanOrEqual(-1);
      expect(drift).toBeLessThanOrEqual(cur.done - prev.sent + 2);
    }
    await a.close();
    await b.close();
  });

  it('control: in client-time mode the limiter 30 s ahead sees a refilled bucket', async () => {
    const prefix = `skew-client:${randomBytes(4).toString('hex')}:`;
    const mk = (clock: Clock) =>
      createLimiter({ limits: [limitFor('gcra')], defaultStore: redisStore({ client: ioredis().client, prefix, timeMode: 'client', deadlineMs: 2000 }), clock });
    const a = mk(real);
    const b = mk(ahead);
    for (let i = 0; i < 4; i++) expect((await a.check({})).allowed).toBe(true);
    expect((await a.check({})).allowed).toBe(false);
    expect((await b.check({})).allowed).toBe(true); // 30 s of refill at 4/min = 2 more
    await a.close();
    await b.close();
  });
});
