/**
 * The fail-mode clause against real redis-server processes that the test
 * kills, pauses (SIGSTOP) and fills (maxmemory): a chain with one abuse limit
 * (closed) and one shedding limit (degraded), each on its own Redis.
 *
 * The limiter runs on a manual clock (grace periods and breaker cool-downs
 * advance instantly); Redis decides at its own server time; deadlines are
 * real timers. Every phase has a time budget.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, createLimiter, ManualClock, type Limiter, type LimitDefinition } from '../../packages/ratecontract/src/index.js';
import { redisStore } from '../../packages/ratecontract/src/stores/redis/index.js';
import { redisCli, startRedis, type RedisServer } from '../integration/redis/helpers/redis-server.js';
import { eventually, failFastClient, load, serverPid, timedLoad } from './helpers.js';

const DEADLINE_MS = 100;
/**
 * Latency allowed above the deadline for the limiter's own work (the
 * deadline's setImmediate, the fallback decision, the lanes' scheduling).
 * Event-loop stalls come on top and are measured, not guessed (`timedLoad`).
 */
const MARGIN_MS = 150;
const COOLDOWN_MS = 1000;
const FAILURE_THRESHOLD = 3;
/**
 * The longest cool-down: a failed probe doubles it up to maxCooldownMs (default 500 ms), never below cooldownMs
 * (1 s here), so it stays at 1 s; 3 good probes in a row (the default) close the breaker.
 */
const MAX_COOLDOWN_MS = Math.max(COOLDOWN_MS, 500);
const PROBES = 3;
const GRACE_MS = 10_000;
const LOGIN_N = 5;
const SEARCH_N = 40;
const K = 4;
/** Checks in flight at once in the down phase. */
const DOWN_LANES = 20;

const LIMITS: LimitDefinition[] = [
  { name: 'login', purpose: 'abuse', algorithm: 'gcra', limit: LOGIN_N, window: '15m', key: 'principal', store: 'auth', failClosedAfter: GRACE_MS },
  { name: 'search', purpose: 'shedding', algorithm: 'token-bucket', limit: SEARCH_N, window: '1h', key: 'header.x-search', store: 'edge' },
];
const login = (who: string) => ({ principal: who });
const search = () => ({ headers: { 'x-search': 'q' } });

interface Rig {
  auth: RedisServer;
  edge: RedisServer;
  authClient: Redis;
  edgeClient: Redis;
  clock: ManualClock;
  limiter: Limiter;
  newLimiter(): Limiter;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
}, 30_000);

async function rig(authExtra: readonly string[] = []): Promise<Rig> {
  const auth = await startRedis(authExtra);
  cleanups.push(() => auth.stop());
  const edge = await startRedis();
  cleanups.push(() => edge.stop());
  const authClient = await failFastClient(auth.port);
  const edgeClient = await failFastClient(edge.port);
  cleanups.push(() => Promise.resolve(authClient.disconnect()));
  cleanups.push(() => Promise.resolve(edgeClient.disconnect()));
  const clock = new ManualClock(Date.now());
  const breaker = { failureThreshold: FAILURE_THRESHOLD, cooldownMs: COOLDOWN_MS };
  const newLimiter = (): Limiter =>
    createLimiter({
      clock,
      replicas: K,
      stores: {
        auth: redisStore({ client: authClient, prefix: 'fm:', deadlineMs: DEADLINE_MS, breaker }),
        edge: redisStore({ client: edgeClient, prefix: 'fm:', deadlineMs: DEADLINE_MS, breaker }),
      },
      limits: LIMITS,
    });
  const limiter = newLimiter();
  // Warm up (script load, connection) on keys the test does not use, so the healthy phase measures steady state.
  const warm = await eventually(10_000, async () => {
    const a = await limiter.check(login('warm-up'));
    const b = await limiter.check({ headers: { 'x-search': 'warm-up' } });
    return a.results[0]?.source === 'store' && b.results[1]?.source === 'store' && Object.values(limiter.breakerStates()).every((x) => x === 'closed');
  });
  expect(warm).toBe(true);
  return { auth, edge, authClient, edgeClient, clock, limiter, newLimiter };
}

function listen(name: string): unknown[] {
  const seen: unknown[] = [];
  const fn = (m: unknown): void => void seen.push(m);
  subscribe(name, fn);
  cleanups.push(() => Promise.resolve(void unsubscribe(name, fn)));
  return seen;
}

async function healthyPhase(r: Rig): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const d = await r.limiter.check(login('p1'));
    expect([d.allowed, d.results[0]?.source]).toEqual([true, 'store']);
  }
  for (let i = 0; i < 5; i++) expect((await r.limiter.check(search())).results[1]?.source).toBe('store');
}

/**
 * While both stores are down: every check resolves within the deadline (the slowest one, plus the event loop's worst
 * stall), login enforces N locally, search ceil(N/k).
 */
async function downPhase(r: Rig): Promise<void> {
  const { runs, slowestMs, stallMs } = await timedLoad(r.limiter, 80, DOWN_LANES, (i) => (i % 2 === 0 ? login('p1') : search()));
  const logins = runs.filter((x) => x.i % 2 === 0);
  const searches = runs.filter((x) => x.i % 2 === 1);
  expect(logins.filter((x) => x.decision.allowed)).toHaveLength(LOGIN_N);
  expect(searches.filter((x) => x.decision.allowed)).toHaveLength(Math.ceil(SEARCH_N / K));
  expect(new Set(logins.map((x) => x.decision.results[0]?.source))).toEqual(new Set(['local']));
  expect(new Set(searches.map((x) => x.decision.results[1]?.source))).toEqual(new Set(['local']));
  expect(runs).toHaveLength(80);
  expect(slowestMs, `slowest check ${slowestMs.toFixed(1)} ms, event loop stalled up to ${stallMs.toFixed(1)} ms`).toBeLessThan(DEADLINE_MS + MARGIN_MS + stallMs);
  expect(r.limiter.breakerStates()).toEqual({ auth: 'open', edge: 'open' });
}

/** After the grace period the abuse limit answers 503; the shedding limit never fails closed. */
async function gracePhase(r: Rig): Promise<void> {
  r.clock.advance(GRACE_MS);
  for (const who of ['p1', 'someone-new']) {
    const d = await r.limiter.check(login(who));
    expect([d.allowed, d.status, d.outcome, d.limitName]).toEqual([false, 503, 'fail-closed', 'login']);
    expect(d.retryAfterMs).toBeGreaterThan(0);
  }
  const s = await r.limiter.check(search());
  expect(s.outcome).not.toBe('fail-closed');
  expect(s.results[1]?.source).toBe('local');
}

/**
 * After recovery, each store's breaker closes after one longest cool-down and its three probes (one at a time), and
 * enforcement is shared again.
 */
async function recoveryPhase(r: Rig): Promise<void> {
  expect(await eventually(10_000, () => Promise.resolve(r.authClient.status === 'ready' && r.edgeClient.status === 'ready'))).toBe(true);
  r.clock.advance(MAX_COOLDOWN_MS);
  for (let probe = 0; probe < PROBES; probe++) {
    expect((await r.limiter.check(login('probe'))).results[0]?.source).toBe('store');
    expect((await r.limiter.check(search())).results[1]?.source).toBe('store');
  }
  expect(r.limiter.breakerStates()).toEqual({ auth: 'closed', edge: 'closed' });
  // Shared: a second limiter (another replica) sees the first one's consumption.
  const other = r.newLimiter();
  for (let i = 0; i < LOGIN_N; i++) expect((await (i % 2 === 0 ? r.limiter : other).check(login('p3'))).allowed).toBe(true);
  const over = await other.check(login('p3'));
  expect([over.allowed, over.status, over.results[0]?.source]).toEqual([false, 429, 'store']);
}

describe('fail modes against a real Redis', () => {
  it('Redis killed mid-load: fast local decisions, N and ceil(N/k), 503 after the grace period, shared again after restart', async () => {
    const r = await rig();
    await healthyPhase(r);
    // Kill both servers while 20 checks are in flight (distinct principals, so nothing is over its limit).
    const pids = [await serverPid(r.auth), await serverPid(r.edge)];
    const { runs: midLoad, slowestMs, stallMs } = await timedLoad(r.limiter, 200, 20, (i) => {
      if (i === 60) for (const pid of pids) process.kill(pid, 'SIGKILL');
      return login(`user-${i}`);
    });
    expect(midLoad).toHaveLength(200);
    expect(midLoad.every((x) => x.decision.allowed)).toBe(true);
    const sources = new Set(midLoad.map((x) => x.decision.results[0]?.source));
    expect(sources).toEqual(new Set(['store', 'local']));
    // Every check, the slowest included: none waits on the dead server beyond the deadline.
    expect(slowestMs, `slowest check ${slowestMs.toFixed(1)} ms, event loop stalled up to ${stallMs.toFixed(1)} ms`).toBeLessThan(DEADLINE_MS + MARGIN_MS + stallMs);
    await downPhase(r);
    await gracePhase(r);
    await r.auth.restart();
    await r.edge.restart();
    await recoveryPhase(r);
  }, 60_000);

  it('Redis paused with SIGSTOP (socket open, no answers): the deadline cuts every call off and the breaker stops calling', async () => {
    const r = await rig();
    const timeouts = listen(CHANNELS.timeout);
    await healthyPhase(r);
    const pids = [await serverPid(r.auth), await serverPid(r.edge)];
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    cleanups.push(() => {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
      return Promise.resolve();
    });
    try {
      await downPhase(r);
      // Timeouts, not connection errors, drove it, on both stores. And the breaker stopped calling: the first wave
      // (one check per lane, all started before any deadline passed) reached a store, plus at most
      // failureThreshold - 1 checks per store from lanes whose first check timed out before the threshold was reached
      // (on a loaded host the deadline timers of one wave fire over several turns of the event loop); the rest did not.
      const stores = (timeouts as Array<{ store: string }>).map((t) => t.store);
      expect(new Set(stores)).toEqual(new Set(['auth', 'edge']));
      expect(stores.length).toBeLessThanOrEqual(DOWN_LANES + 2 * (FAILURE_THRESHOLD - 1));
      await gracePhase(r);
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
    }
    await recoveryPhase(r);
  }, 60_000);

  it('Redis out of memory (maxmemory, noeviction): errors are store failures, never admissions', async () => {
    const r = await rig(['--maxmemory', '4mb', '--maxmemory-policy', 'noeviction']);
    const errors = listen(CHANNELS.storeError) as Array<{ error: Error; store: string }>;
    await healthyPhase(r);
    const filler = 'x'.repeat(16 * 1024);
    let full = false;
    for (let i = 0; i < 2000 && !full; i++) {
      try {
        await r.authClient.set(`junk:${i}`, filler);
      } catch (error) {
        full = /OOM/.test((error as Error).message);
      }
    }
    expect(full).toBe(true);
    // Keep it solidly over the limit (freed client buffers could otherwise let a few writes through).
    const used = Number(/used_memory:(\d+)/.exec(await redisCli(r.auth.port, 'INFO', 'memory'))?.[1]);
    await redisCli(r.auth.port, 'CONFIG', 'SET', 'maxmemory', String(Math.floor(used / 2)));
    // A fresh principal: if the script's error were mistaken for an answer it would show as source 'store'.
    const runs = await load(r.limiter, 20, 5, () => login('fresh'));
    expect(runs.filter((x) => x.decision.allowed)).toHaveLength(LOGIN_N);
    expect(runs.every((x) => x.decision.results[0]?.source === 'local')).toBe(true);
    expect(errors.some((e) => e.store === 'auth' && /OOM/.test(String(e.error.message)))).toBe(true);
    // The healthy edge store is untouched.
    expect((await r.limiter.check(search())).results[1]?.source).toBe('store');
    r.clock.advance(GRACE_MS);
    expect((await r.limiter.check(login('fresh'))).outcome).toBe('fail-closed');
    // Memory freed: the breaker's probe succeeds and the store decides again.
    await redisCli(r.auth.port, 'FLUSHALL');
    await redisCli(r.auth.port, 'CONFIG', 'SET', 'maxmemory', '0');
    r.clock.advance(MAX_COOLDOWN_MS);
    expect((await r.limiter.check(login('fresh'))).results[0]?.source).toBe('store');
  }, 60_000);

  it("only the failed store's limits change behaviour", async () => {
    const r = await rig();
    await healthyPhase(r);
    process.kill(await serverPid(r.auth), 'SIGKILL');
    const other = r.newLimiter();
    const runs = await load(r.limiter, 40, 10, (i) => (i % 2 === 0 ? login('p1') : search()));
    expect(runs.filter((x) => x.i % 2 === 0).every((x) => x.decision.results[0]?.source === 'local')).toBe(true);
    const searches = runs.filter((x) => x.i % 2 === 1);
    expect(searches.every((x) => x.decision.results[1]?.source === 'store' && x.decision.allowed)).toBe(true);
    // Still shared: another replica sees all 5 + 20 search admissions in Redis.
    const seen = await other.check(search());
    expect(seen.results[1]?.source).toBe('store');
    expect(seen.results[1]?.remaining).toBe(SEARCH_N - 5 - 20 - 1);
    expect(r.limiter.breakerStates()).toEqual({ auth: 'open', edge: 'closed' });
    await r.auth.restart();
  }, 60_000);
});
