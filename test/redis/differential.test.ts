/**
 * Differential property test: random sequences of (time step, key, cost)
 * through each TypeScript algorithm and its Lua twin (client-time mode) give
 * identical decisions, identical retryAfterMs (Infinity included) and
 * identical stored state. Time-budgeted: RC_PROPERTY_BUDGET_MS for the whole
 * file (default 12 s, 30 s when CI=true), split across the algorithms.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { algorithms, type AlgorithmName, type CompiledLimit, type StoreOp, type StoreOpResult } from '../../src/index.js';
import { compileLimit } from '../../src/core/compile.js';
import { redisStore } from '../../src/stores/redis/index.js';
import { decodeState } from '../../src/stores/redis/codec.js';
import { useStandaloneIoredis } from './helpers/clients.js';
import type { Redis } from 'ioredis';

const BUDGET_MS = Number(process.env.RC_PROPERTY_BUDGET_MS ?? (process.env.CI === 'true' ? 30_000 : 12_000));
const VARIANTS: ReadonlyArray<{ algorithm: AlgorithmName; queue?: boolean }> = [
  { algorithm: 'fixed-window' },
  { algorithm: 'sliding-window' },
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

function configArb(usesBurst: boolean) {
  return fc.record({
    limit: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constantFrom(1, 1000, 65_537)),
    window: fc.constantFrom(...WINDOWS),
    burst: usesBurst ? fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }) : fc.constant(undefined),
    // Large clocks exercise integer formatting; small ones, negative-free edge arithmetic.
    start: fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 2 ** 42 }), fc.constant(1_700_000_000_123)),
  });
}

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

function show(r: StoreOpResult): string {
  return JSON.stringify({ ...r, retryAfterMs: r.retryAfterMs === Infinity ? 'Infinity' : r.retryAfterMs });
}

describe('Lua twins make the decisions of the TypeScript algorithms (client time)', () => {
  for (const v of VARIANTS) {
    const algo = algorithms[v.algorithm];
    it(
      `${v.algorithm}${v.queue === true ? ' (queue)' : ''}`,
      async () => {
        const client = ioredis().client as Redis;
        let runs = 0;
        await fc.assert(
          fc.asyncProperty(
            configArb(algo.usesBurst).chain((cfg) => {
              const capacity = Math.max(cfg.limit, cfg.burst ?? cfg.limit);
              return fc.tuple(fc.constant(cfg), stepsArb(cfg.window, capacity));
            }),
            async ([cfg, steps]) => {
              runs++;
              const limit: CompiledLimit = compileLimit(
                {
                  name: 'diff',
                  purpose: 'shedding',
                  algorithm: v.algorithm,
                  limit: cfg.limit,
                  window: cfg.window,
                  ...(cfg.burst === undefined ? {} : { burst: cfg.burst }),
                  ...(v.queue === true ? { mode: 'queue' as const } : {}),
                },
                'limits[0]',
                new Set(),
              );
              const store = redisStore({ client, prefix: `diff:${randomBytes(6).toString('hex')}:`, timeMode: 'client', ttlGraceMs: 600_000 });
              const states = new Map<number, unknown>();
              let now = cfg.start;
              for (let s = 0; s < steps.length; s++) {
                const step = steps[s] as Step;
                now += step.dt;
                const key = `k${step.key}`;
                const op: StoreOp = { limit, key, cost: step.cost, leaseId: v.algorithm === 'concurrency' ? `lease-${s}` : undefined };
                // The reference: the pure algorithm, as runChain applies it to a one-op chain.
                const pre = states.get(step.key);
                const r = algo.decide(pre, now, step.cost, limit.params, op.leaseId);
                let want: StoreOpResult;
                if (r.allowed && step.cost > 0) {
                  if (r.state === undefined) states.delete(step.key);
                  else states.set(step.key, r.state);
                  want = { allowed: true, consumed: true, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: 0, delayMs: r.delayMs };
                } else {
                  want = { allowed: r.allowed, consumed: false, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, delayMs: 0 };
                }
                const [got] = await store.evaluate([op], now);
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
                const raw = await client.get(store.keyFor(limit.id, key));
                if (st !== undefined && algo.expiresAt(st, limit.params) > now) {
                  if (raw === null) throw new Error(`step ${s}: state of ${key} missing in Redis, expected ${JSON.stringify(st)}`);
                  expect(decodeState(v.algorithm, raw)).toEqual(st);
                } else if (raw !== null) {
                  // Redis may keep an expired state for its grace period; it must decide like no state at all.
                  const stale = decodeState(v.algorithm, raw);
                  expect(algo.expiresAt(stale, limit.params)).toBeLessThanOrEqual(now);
                }
              }
            },
          ),
          { numRuns: 100_000, interruptAfterTimeLimit: PER_VARIANT_MS, endOnFailure: false },
        );
        expect(runs).toBeGreaterThan(5);
      },
      PER_VARIANT_MS * 4 + 30_000,
    );
  }
});
