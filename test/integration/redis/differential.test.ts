/**
 * Differential property test: random sequences of (time step, key, cost)
 * through each TypeScript algorithm and its Lua twin (client-time mode) give
 * identical decisions, identical retryAfterMs (Infinity included) and
 * identical stored state; then the same at quota magnitudes (limits up to
 * 10^12, windows up to 366 days, beyond 2^49), in client time and in server
 * time. The sliding window runs at precision 1 (two counters), 3 and 10
 * (sub-windows; the window rounded down to a multiple of the precision). Time-budgeted: RC_PROPERTY_BUDGET_MS for each of the first two
 * groups (default 12 s, 30 s with RC_TEST_TIER=full: npm run test:full), split across the algorithms,
 * and half that for the server-time group.
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { algorithms, type AlgorithmName, type CompiledLimit, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { decodeState, encodeState } from '../../../packages/ratecontract/src/stores/redis/state-codec.js';
import { ADVERSARIAL_SLIDING, quotaParamsArb } from '../../helpers/fc-budget.js';
import { useStandaloneIoredis } from './helpers/clients.js';
import { FULL_BUDGETS } from '../../helpers/tier.js';
import type { Redis } from 'ioredis';

const BUDGET_MS = Number(process.env.RC_PROPERTY_BUDGET_MS ?? (FULL_BUDGETS ? 30_000 : 12_000));
const VARIANTS: ReadonlyArray<{ algorithm: AlgorithmName; queue?: boolean; precision?: number }> = [
  { algorithm: 'fixed-window' },
  { algorithm: 'sliding-window' },
  { algorithm: 'sliding-window', precision: 3 },
  { algorithm: 'sliding-window', precision: 10 },
  { algorithm: 'sliding-log' },
  { algorithm: 'token-bucket' },
  { algorithm: 'leaky-bucket' },
  { algorithm: 'leaky-bucket', queue: true },
  { algorithm: 'gcra' },
  { algorithm: 'concurrency' },
];
const PER_VARIANT_MS = Math.max(500, Math.floor(BUDGET_MS / VARIANTS.length));

const ioredis = useStandaloneIoredis({ beforeAll, afterAll });

interface Step {
  readonly dt: number;
  readonly key: number;
  readonly cost: number;
  readonly refund: boolean;
}

const WINDOWS = [1, 2, 7, 100, 997, 1000, 60_000, 86_400_000];

function stepsArb(windowMs: number, capacity: number) {
  const dt = fc.oneof(
    { weight: 3, arbitrary: fc.constant(0) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 5 }) },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: windowMs * 3 }) },
    { weight: 1, arbitrary: fc.constantFrom(windowMs - 1, windowMs, windowMs + 1) },
  );
  const cost = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: Math.min(capacity, 4) }) },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: capacity }) },
    { weight: 1, arbitrary: fc.constant(capacity + 1) },
  );
  return fc.array(fc.record({ dt, key: fc.integer({ min: 0, max: 2 }), cost, refund: fc.boolean() }), { minLength: 1, maxLength: 60 });
}

/** A store result without its decision time: the algorithm's figures, which the reference computes. */
function figuresOf(r: StoreOpResult | undefined): StoreOpResult | undefined {
  if (r === undefined) return undefined;
  return { allowed: r.allowed, consumed: r.consumed, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, delayMs: r.delayMs };
}

function show(r: StoreOpResult): string {
  return JSON.stringify({ ...r, retryAfterMs: r.retryAfterMs === Infinity ? 'Infinity' : r.retryAfterMs });
}

interface Config {
  readonly limit: number;
  readonly window: number;
  readonly burst: number | undefined;
  readonly start: number;
}

function compiled(v: (typeof VARIANTS)[number], cfg: Config): CompiledLimit {
  return compileLimit(
    {
      name: 'diff',
      purpose: 'shedding',
      algorithm: v.algorithm,
      limit: cfg.limit,
      window: v.precision === undefined ? cfg.window : Math.max(v.precision, cfg.window - (cfg.window % v.precision)),
      ...(cfg.burst === undefined ? {} : { burst: cfg.burst }),
      ...(v.queue === true ? { mode: 'queue' as const } : {}),
      ...(v.precision === undefined ? {} : { precision: v.precision }),
    },
    'limits[0]',
    new Set(),
  );
}

/** What the store must answer for the pure algorithm's result `r` of an op of `cost` (as runChain applies it to a one-op chain). */
function expected(r: { allowed: boolean; remaining: number; resetMs: number; retryAfterMs: number; delayMs: number }, cost: number): StoreOpResult {
  return r.allowed && cost > 0
    ? { allowed: true, consumed: true, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: 0, delayMs: r.delayMs }
    : { allowed: r.allowed, consumed: false, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, delayMs: 0 };
}

/** One workload through the Lua twin in client-time mode and through the TypeScript algorithm, step by step. */
async function clientTimeRun(client: Redis, v: (typeof VARIANTS)[number], cfg: Config, steps: readonly Step[]): Promise<void> {
  const algo = algorithms[v.algorithm];
  const limit = compiled(v, cfg);
  const store = redisStore({ client, prefix: `diff:${randomBytes(6).toString('hex')}:`, timeMode: 'client', ttlGraceMs: 600_000 });
  const states = new Map<number, unknown>();
  let now = cfg.start;
  for (let s = 0; s < steps.length; s++) {
    const step = steps[s] as Step;
    now += step.dt;
    const key = `k${step.key}`;
    const op: StoreOp = { spec: limit, key, cost: step.cost, leaseId: v.algorithm === 'concurrency' ? `lease-${s}` : undefined };
    // The reference: the pure algorithm, as runChain applies it to a one-op chain.
    const pre = states.get(step.key);
    const r = algo.decide(pre, now, step.cost, limit.params, op.leaseId);
    const want = expected(r, step.cost);
    if (want.consumed) {
      if (r.state === undefined) states.delete(step.key);
      else states.set(step.key, r.state);
    }
    const [full] = await store.evaluate([op], now);
    const got = figuresOf(full);
    // Client time: the store reports the instant it decided at, the one it was given.
    if (full !== undefined && full.decidedAt !== now) throw new Error(`step ${s}: decidedAt ${String(full.decidedAt)}, expected ${now}`);
    if (JSON.stringify(got) !== JSON.stringify(want) || got?.retryAfterMs !== want.retryAfterMs) {
      throw new Error(`step ${s} at t=${now}, key ${key}, cost ${step.cost}: expected ${show(want)}, got ${got === undefined ? 'nothing' : show(got)}`);
    }
    if (want.consumed && step.refund) {
      const st = states.get(step.key);
      if (st !== undefined) {
        const back = algo.refund(st, now, step.cost, limit.params, op.leaseId);
        if (back === undefined) states.delete(step.key);
        else states.set(step.key, back);
      }
      await store.refund([op], now);
    }
    // The stored state is the TypeScript state, bit for bit, while it is live.
    const st = states.get(step.key);
    const raw = await client.getBuffer(store.keyFor(limit.id, key));
    if (st !== undefined && algo.expiresAt(st, limit.params) > now) {
      if (raw === null) throw new Error(`step ${s}: state of ${key} missing in Redis, expected ${JSON.stringify(st)}`);
      expect(decodeState(v.algorithm, raw)).toEqual(st);
    } else if (raw !== null) {
      // Redis may keep an expired state for its grace period; it must decide like no state at all.
      const stale = decodeState(v.algorithm, raw);
      expect(algo.expiresAt(stale, limit.params)).toBeLessThanOrEqual(now);
    }
  }
}

/** The server's clock in ms, as the scripts read it (TIME). */
async function serverNow(client: Redis): Promise<number> {
  const [sec, usec] = (await client.time()) as unknown as [string | number, string | number];
  return Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
}

/**
 * Whether the stored `raw` is the TypeScript state `st` at `now`: equal while
 * `st` is live; absent, or expired, once it is not. `later` is a server time
 * read after `raw` (a short-lived key may have expired by its TTL meanwhile).
 */
function storedIs(v: (typeof VARIANTS)[number], limit: CompiledLimit, st: unknown, raw: Buffer | null, now: number, later: number): boolean {
  const algo = algorithms[v.algorithm];
  if (st !== undefined && algo.expiresAt(st, limit.params) > now) {
    if (raw === null) return algo.expiresAt(st, limit.params) <= later + 1;
    return isDeepStrictEqual(decodeState(v.algorithm, raw), st);
  }
  return raw === null || algo.expiresAt(decodeState(v.algorithm, raw), limit.params) <= now;
}

/**
 * One workload through the Lua twin in server-time mode (the script reads
 * TIME). The server's clock is read before and after each call; the
 * TypeScript algorithm must make the same decision and leave the same state
 * at some instant in between (usually one or two candidates), which then
 * becomes the reference's `now`. Steps' `dt` is the real time that passes.
 */
async function serverTimeRun(client: Redis, v: (typeof VARIANTS)[number], cfg: Config, steps: readonly Step[]): Promise<void> {
  const algo = algorithms[v.algorithm];
  const limit = compiled(v, cfg);
  const store = redisStore({ client, prefix: `diff-server:${randomBytes(6).toString('hex')}:`, timeMode: 'server' });
  const states = new Map<number, unknown>();
  for (let s = 0; s < steps.length; s++) {
    const step = steps[s] as Step;
    const key = `k${step.key}`;
    const redisKey = store.keyFor(limit.id, key);
    const op: StoreOp = { spec: limit, key, cost: step.cost, leaseId: v.algorithm === 'concurrency' ? `lease-${s}` : undefined };
    const pre = states.get(step.key);
    const before = await serverNow(client);
    const [full] = await store.evaluate([op], 0);
    const got = figuresOf(full);
    const after = await serverNow(client);
    // Server time: the store reports the server's instant, between the TIMEs read around the call.
    expect(full?.decidedAt).toBeGreaterThanOrEqual(before);
    expect(full?.decidedAt).toBeLessThanOrEqual(after);
    const raw = await client.getBuffer(redisKey);
    const later = await serverNow(client);
    let decidedAt: number | undefined;
    let next: unknown;
    for (let now = before; now <= after && decidedAt === undefined; now++) {
      const r = algo.decide(pre, now, step.cost, limit.params, op.leaseId);
      const want = expected(r, step.cost);
      if (got === undefined || JSON.stringify(got) !== JSON.stringify(want) || got.retryAfterMs !== want.retryAfterMs) continue;
      const st = want.consumed ? r.state : pre;
      if (!storedIs(v, limit, st, raw, now, later)) continue;
      decidedAt = now;
      next = st;
    }
    if (decidedAt === undefined) {
      throw new Error(`step ${s}, server time ${before}..${after}, key ${key}, cost ${step.cost}: no instant gives ${got === undefined ? 'nothing' : show(got)} and state ${raw === null ? 'none' : JSON.stringify(decodeState(v.algorithm, raw))} (state before: ${JSON.stringify(pre)})`);
    }
    if (got?.consumed === true && step.refund && next !== undefined) {
      next = algo.refund(next, decidedAt, step.cost, limit.params, op.leaseId);
      // The refund carries the instant the store reported (as the limiter does), and the store gives back at it.
      await store.refund([{ ...op, decidedAt: full?.decidedAt }], 0);
      const rawBack = await client.getBuffer(redisKey);
      const laterBack = await serverNow(client);
      if (!storedIs(v, limit, next, rawBack, decidedAt, laterBack)) {
        throw new Error(`step ${s}: after the refund at ${decidedAt}, Redis holds ${rawBack === null ? 'nothing' : JSON.stringify(decodeState(v.algorithm, rawBack))}, expected ${JSON.stringify(next)}`);
      }
    }
    if (next === undefined) states.delete(step.key);
    else states.set(step.key, next);
  }
}

function configOf(_v: (typeof VARIANTS)[number], usesBurst: boolean): fc.Arbitrary<Config> {
  return fc.record({
    limit: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constantFrom(1, 1000, 65_537)),
    window: fc.constantFrom(...WINDOWS),
    burst: usesBurst ? fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }) : fc.constant(undefined),
    // Large clocks exercise integer formatting; small ones, negative-free edge arithmetic.
    start: fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 2 ** 42 }), fc.constant(1_700_000_000_123)),
  });
}

/** Quota-sized configurations (every one accepted by compileLimit): limits up to 10^12, windows up to 366 days. */
function quotaConfigOf(v: (typeof VARIANTS)[number], usesBurst: boolean): fc.Arbitrary<Config> {
  return fc
    .tuple(
      quotaParamsArb({ burst: usesBurst, queue: v.queue === true, log: v.algorithm === 'sliding-log' }),
      fc.oneof(fc.integer({ min: 0, max: 2 ** 42 }), fc.constant(1_700_000_000_123)),
    )
    .map(([p, start]) => ({ limit: p.limit, window: p.windowMs, burst: usesBurst && p.burst !== p.limit ? p.burst : undefined, start }));
}

function workload(cfgArb: fc.Arbitrary<Config>) {
  return cfgArb.chain((cfg) => {
    const capacity = Math.max(cfg.limit, cfg.burst ?? cfg.limit);
    return fc.tuple(fc.constant(cfg), stepsArb(cfg.window, capacity));
  });
}

const GROUPS: ReadonlyArray<{
  readonly title: string;
  readonly config: (v: (typeof VARIANTS)[number], usesBurst: boolean) => fc.Arbitrary<Config>;
  readonly run: (client: Redis, v: (typeof VARIANTS)[number], cfg: Config, steps: readonly Step[]) => Promise<void>;
  readonly ms: number;
}> = [
  { title: 'Lua twins make the decisions of the TypeScript algorithms (client time)', config: configOf, run: clientTimeRun, ms: PER_VARIANT_MS },
  { title: 'Lua twins make the same decisions at quota magnitudes (client time)', config: quotaConfigOf, run: clientTimeRun, ms: PER_VARIANT_MS },
  { title: 'Lua twins make the same decisions at quota magnitudes (server time)', config: quotaConfigOf, run: serverTimeRun, ms: Math.max(500, Math.floor(PER_VARIANT_MS / 2)) },
];

for (const group of GROUPS) {
  describe(group.title, () => {
    for (const v of VARIANTS) {
      const algo = algorithms[v.algorithm];
      it(
        `${v.algorithm}${v.queue === true ? ' (queue)' : ''}${v.precision === undefined ? '' : ` (precision ${v.precision})`}`,
        async () => {
          const client = ioredis().client as Redis;
          let runs = 0;
          await fc.assert(
            fc.asyncProperty(workload(group.config(v, algo.usesBurst)), async ([cfg, steps]) => {
              runs++;
              await group.run(client, v, cfg, steps);
            }),
            { numRuns: 100_000, interruptAfterTimeLimit: group.ms, endOnFailure: false },
          );
          expect(runs).toBeGreaterThan(5);
        },
        group.ms * 4 + 30_000,
      );
    }
  });
}

describe('the sliding-window twin where doubles would round the wrong way (client time)', () => {
  it.each(ADVERSARIAL_SLIDING)('prev %d, %d ms into a window of %d ms: the same decisions as the TypeScript algorithm', async (prev, elapsed, W) => {
    const client = ioredis().client as Redis;
    const limit = compiled({ algorithm: 'sliding-window' }, { limit: 2 ** 40, window: W, burst: undefined, start: 0 });
    const store = redisStore({ client, prefix: `diff-adv:${randomBytes(6).toString('hex')}:`, timeMode: 'client', ttlGraceMs: 600_000 });
    const w = 50 * W;
    const now = w + elapsed;
    const state = { w, c: 0, p: prev };
    const held = prev - Number((BigInt(prev) * BigInt(elapsed)) / BigInt(W));
    for (const cost of [limit.params.limit - held, limit.params.limit - held + 1]) {
      // Both sides start from the same stored state: a previous window's count of prev.
      await client.set(store.keyFor(limit.id, 'k'), Buffer.from(encodeState('sliding-window', state)), 'PX', 600_000);
      const want = expected(algorithms['sliding-window'].decide(state, now, cost, limit.params), cost);
      const got = figuresOf((await store.evaluate([{ spec: limit, key: 'k', cost, leaseId: undefined }], now))[0]);
      expect(got).toEqual(want);
      if (got !== undefined && got.allowed === false) {
        // At the reported retry instant both admit; one ms before, both reject.
        for (const at of [now + got.retryAfterMs, now + got.retryAfterMs - 1]) {
          await client.set(store.keyFor(limit.id, 'k'), Buffer.from(encodeState('sliding-window', state)), 'PX', 600_000);
          const again = figuresOf((await store.evaluate([{ spec: limit, key: 'k', cost, leaseId: undefined }], at))[0]);
          expect(again).toEqual(expected(algorithms['sliding-window'].decide(state, at, cost, limit.params), cost));
          expect(again?.allowed).toBe(at === now + got.retryAfterMs);
        }
      }
    }
  });
});
