/**
 * Redis restarted empty (issue 25): `redis-server --save '' --appendonly no`
 * (the helpers' servers) stopped and started again on the same port, so the
 * state of every key is lost. A fleet of K limiters (each its own ioredis
 * client, `new Redis(url)` as the quick start), each checking an abuse limit
 * (`closed`, GCRA, N per hour, per principal: no refill within the test) and
 * a shedding limit (`degraded`, k = K, N per hour, per principal) on
 * PRINCIPALS principals, 10 lanes each.
 *
 * What the fleet admits per principal in the window of the restart (the
 * figure docs/fail-modes.md states):
 * - by the store: the N it admitted before, and N again after (it starts
 *   from nothing) = 2N; less what checks lost in the restart consumed
 *   unseen (a command that timed out on the client may still run on the new
 *   server: toward rejecting);
 * - locally, while the store could not answer: at most N per process for a
 *   `closed` limit (K x N across the fleet) and ceil(N/K) per process for a
 *   `degraded` one (about N across the fleet);
 * so at most (2 + K) x N for the abuse limit and 2N + K x ceil(N/K) for the
 * shedding limit. A quiet restart (no check while Redis is down) admits
 * exactly 2N by the store and nothing locally: the first test holds that,
 * the second the bound under load through the restart.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createLimiter, type Limiter } from '../../packages/ratecontract/src/index.js';
import { redisStore } from '../../packages/ratecontract/src/stores/redis/index.js';
import { startRedis, type RedisServer } from '../integration/redis/helpers/redis-server.js';
import { sleep } from './network-rig.js';

const K = 4;
const N = 10;
const PRINCIPALS = 20;
const LANES = 10;

let server: RedisServer | undefined;
const clients: Redis[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  await server?.stop();
  server = undefined;
}, 30_000);

interface Fleet {
  readonly abuse: Limiter[];
  readonly shed: Limiter[];
}

function fleet(url: string): Fleet {
  const abuse: Limiter[] = [];
  const shed: Limiter[] = [];
  for (let i = 0; i < K; i++) {
    const client = new Redis(url);
    client.on('error', () => undefined);
    clients.push(client);
    // A generous deadline: what this test counts is admissions, not latency; a loaded host's missed 20 ms deadlines would blur the figure.
    const store = redisStore({ client, prefix: 'empty:', deadlineMs: 200 });
    abuse.push(createLimiter({ defaultStore: store, limits: [{ name: 'login', purpose: 'abuse', algorithm: 'gcra', limit: N, window: '1h', key: 'principal', failClosedAfter: '1m' }] }));
    shed.push(createLimiter({ defaultStore: store, replicas: K, limits: [{ name: 'api', purpose: 'shedding', algorithm: 'gcra', limit: N, window: '1h', key: 'principal' }] }));
  }
  return { abuse, shed };
}

/** Admissions per principal by source, for one limit across the fleet. */
type Tally = Map<number, { store: number; local: number }>;

/** Every limiter of `limiters` checks every principal, LANES lanes each, until `stop()`; tallies admissions. */
async function drive(limiters: readonly Limiter[], tally: Tally, stop: () => boolean, errors: unknown[]): Promise<void> {
  await Promise.all(
    limiters.flatMap((l) =>
      Array.from({ length: LANES }, async (_, lane) => {
        for (let i = lane; !stop(); i += LANES) {
          const k = i % PRINCIPALS;
          try {
            const d = await l.check({ principal: `p${k}` });
            const src = d.results[0]?.source;
            if (d.allowed && (src === 'store' || src === 'local')) {
              const t = tally.get(k) ?? { store: 0, local: 0 };
              t[src]++;
              tally.set(k, t);
            }
          } catch (error) {
            errors.push(error);
          }
          // Light load: a check every ms or so per lane.
          await new Promise((r) => setImmediate(r));
        }
      }),
    ),
  );
}

describe('Redis restarted empty (--save ""): what the fleet admits in the window after', () => {
  it(`a quiet restart: exactly 2N per principal, all by the store (K = ${K}, N = ${N})`, async () => {
    server = await startRedis();
    const f = fleet(server.url);
    const abuse: Tally = new Map();
    const errors: unknown[] = [];
    let stop = false;
    let run = drive(f.abuse, abuse, () => stop, errors);
    await sleep(1500);
    stop = true;
    await run;
    await server.restart();
    // Every client back (its reconnect and the scripts reloaded on NOSCRIPT), with no check made meanwhile.
    await sleep(1500);
    stop = false;
    run = drive(f.abuse, abuse, () => stop, errors);
    await sleep(1500);
    stop = true;
    await run;
    expect(errors).toEqual([]);
    // By the store, exactly 2N. A check that missed its deadline anyway (a loaded host: the first check after the
    // restart reloads the scripts) is decided by its fail mode, within the local allowance; printed.
    const locals = Array.from({ length: PRINCIPALS }, (_, k) => abuse.get(k)?.local ?? 0);
    console.log(`restart empty, quiet: local admissions per principal ${Math.min(...locals)} to ${Math.max(...locals)}`);
    for (let k = 0; k < PRINCIPALS; k++) {
      expect(abuse.get(k)?.store, `p${k}`).toBe(2 * N);
      expect(abuse.get(k)?.local, `p${k}`).toBeLessThanOrEqual(K * N);
    }
    await Promise.all([...f.abuse, ...f.shed].map((l) => l.close()));
  }, 60_000);

  it(`under load through the restart: at most (2 + K)N per principal for the closed limit, 2N + K ceil(N/K) for the degraded one`, async () => {
    server = await startRedis();
    const f = fleet(server.url);
    const abuse: Tally = new Map();
    const shed: Tally = new Map();
    const errors: unknown[] = [];
    let stop = false;
    const run = Promise.all([drive(f.abuse, abuse, () => stop, errors), drive(f.shed, shed, () => stop, errors)]);
    const all = (t: Tally, atLeast: number): boolean => Array.from({ length: PRINCIPALS }, (_, k) => t.get(k)?.store ?? 0).every((x) => x >= atLeast);
    const until = async (test: () => boolean, budgetMs: number): Promise<void> => {
      const end = Date.now() + budgetMs;
      while (!test() && Date.now() < end) await sleep(50);
    };
    // Every principal's N spent in the store before the restart, then the restart, then checks until they are spent
    // again (or 10 s), so the figure is the window's whole.
    await until(() => all(abuse, N) && all(shed, N), 15_000);
    expect(all(abuse, N) && all(shed, N), 'the fleet never spent N per principal before the restart').toBe(true);
    const restartAt = Date.now();
    await server.restart();
    const upAt = Date.now();
    await until(() => all(abuse, 2 * N) && all(shed, 2 * N), 10_000);
    await sleep(500);
    stop = true;
    await run;
    expect(errors).toEqual([]);
    const sum = (t: Tally, s: 'store' | 'local'): number[] => Array.from({ length: PRINCIPALS }, (_, k) => t.get(k)?.[s] ?? 0);
    const line = (name: string, t: Tally): string => {
      const st = sum(t, 'store');
      const lo = sum(t, 'local');
      const tot = st.map((x, i) => x + (lo[i] as number));
      return `${name}: by the store ${Math.min(...st)} to ${Math.max(...st)}, locally ${Math.min(...lo)} to ${Math.max(...lo)}, in all ${Math.min(...tot)} to ${Math.max(...tot)} per principal`;
    };
    console.log(`restart empty under load (restart took ${upAt - restartAt} ms): ${line('abuse (closed)', abuse)}; ${line('shedding (degraded)', shed)}`);
    for (let k = 0; k < PRINCIPALS; k++) {
      const a = abuse.get(k) ?? { store: 0, local: 0 };
      const s = shed.get(k) ?? { store: 0, local: 0 };
      // The store admitted again after the restart (the state was lost): more than N, never more than 2N.
      expect(a.store, `abuse p${k}`).toBeGreaterThan(N);
      expect(a.store, `abuse p${k}`).toBeLessThanOrEqual(2 * N);
      expect(a.local, `abuse p${k}`).toBeLessThanOrEqual(K * N);
      expect(a.store + a.local, `abuse p${k}`).toBeLessThanOrEqual((2 + K) * N);
      expect(s.store, `shed p${k}`).toBeGreaterThan(N);
      expect(s.store, `shed p${k}`).toBeLessThanOrEqual(2 * N);
      expect(s.local, `shed p${k}`).toBeLessThanOrEqual(K * Math.ceil(N / K));
    }
    // Whether checks fell back depends on whether the restart outlasted the 200 ms deadline (ioredis holds commands
    // while it reconnects); the bounds above hold either way, and the run prints which it was.
    await Promise.all([...f.abuse, ...f.shed].map((l) => l.close()));
  }, 60_000);
});
