/**
 * The differential property test of differential.test.ts (client time, the
 * first group), over HTTP: random sequences of (time step, key, cost,
 * refund) through each TypeScript algorithm and, by `ratecontract/redis-http`
 * and the REST server of helpers/rest-server.ts, its Lua twin: identical
 * decisions, identical retryAfterMs (Infinity included), and the stored
 * state (read over TCP) the TypeScript state while it is live. The JSON
 * path (replies as JSON numbers) is what this adds over the TCP clients.
 * Half the configurations are quota-sized (limits up to 10^12, windows up
 * to 366 days), where the figures are far from small JSON numbers.
 * Budget: 500 ms per algorithm, 800 ms with RC_TEST_TIER=full.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { algorithms, type AlgorithmName, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';
import { redisHttpStore } from '../../../packages/ratecontract/src/stores/redis-http/index.js';
import { decodeState } from '../../../packages/ratecontract/src/stores/redis/state-codec.js';
import { quotaParamsArb } from '../../helpers/fc-budget.js';
import { FULL_BUDGETS } from '../../helpers/tier.js';
import { useStandaloneIoredis } from './helpers/clients.js';
import { startRestServer, type RestServer } from './helpers/rest-server.js';

const PER_VARIANT_MS = FULL_BUDGETS ? 800 : 500;
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
const WINDOWS = [1, 7, 1000, 60_000, 86_400_000];

const ioredis = useStandaloneIoredis({ beforeAll, afterAll });
let rest: RestServer | undefined;
beforeAll(async () => {
  rest = await startRestServer(ioredis().client as Redis);
  // Warm up (scripts loaded, the loopback connection and the code paths hot), so that the first property run fits its budget.
  const warm = redisHttpStore({ url: rest.url, token: rest.token, prefix: 'hdiff-warm:', timeMode: 'client', ttlGraceMs: 600_000, deadlineMs: 5_000 });
  await warm.ready();
  const limit = compileLimit({ name: 'warm', purpose: 'shedding', algorithm: 'gcra', limit: 5, window: 1000 }, 'limits[0]', new Set());
  for (let i = 0; i < 20; i++) await warm.evaluate([{ spec: limit, key: `k${i % 3}`, cost: 1, leaseId: undefined }], 1_700_000_000_000 + i);
}, 30_000);
afterAll(async () => {
  await rest?.close();
});

function figuresOf(r: StoreOpResult | undefined): StoreOpResult | undefined {
  if (r === undefined) return undefined;
  return { allowed: r.allowed, consumed: r.consumed, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, delayMs: r.delayMs };
}

const show = (r: StoreOpResult | undefined): string => (r === undefined ? 'nothing' : JSON.stringify({ ...r, retryAfterMs: r.retryAfterMs === Infinity ? 'Infinity' : r.retryAfterMs }));

interface Config {
  readonly limit: number;
  readonly window: number;
  readonly burst: number | undefined;
  readonly start: number;
}

const workload = (v: (typeof VARIANTS)[number], usesBurst: boolean) =>
  fc
    .oneof(
      fc.record<Config>({
        limit: fc.integer({ min: 1, max: 20 }),
        window: fc.constantFrom(...WINDOWS),
        burst: usesBurst ? fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }) : fc.constant(undefined),
        start: fc.integer({ min: 1_600_000_000_000, max: 1_800_000_000_000 }),
      }),
      fc
        .tuple(quotaParamsArb({ burst: usesBurst, queue: v.queue === true, log: v.algorithm === 'sliding-log' }), fc.integer({ min: 0, max: 2 ** 42 }))
        .map(([p, start]): Config => ({ limit: p.limit, window: p.windowMs, burst: usesBurst && p.burst !== p.limit ? p.burst : undefined, start })),
    )
    .chain((cfg) => {
      const capacity = Math.max(cfg.limit, cfg.burst ?? cfg.limit);
      const dt = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: cfg.window * 3 }), fc.constantFrom(cfg.window - 1, cfg.window, cfg.window + 1));
      const cost = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: Math.min(capacity, 4) }) }, { weight: 1, arbitrary: fc.constant(capacity + 1) });
      return fc.tuple(fc.constant(cfg), fc.array(fc.record({ dt, key: fc.integer({ min: 0, max: 2 }), cost, refund: fc.boolean() }), { minLength: 1, maxLength: 40 }));
    });

describe('Lua twins over HTTP make the decisions of the TypeScript algorithms (client time)', () => {
  for (const v of VARIANTS) {
    const algo = algorithms[v.algorithm];
    it(`${v.algorithm}${v.queue === true ? ' (queue)' : ''}`, async () => {
      const tcp = ioredis().client as Redis;
      const endpoint = rest as RestServer;
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(workload(v, algo.usesBurst), async ([cfg, steps]) => {
          runs++;
          const limit = compileLimit(
            { name: 'diff', purpose: 'shedding', algorithm: v.algorithm, limit: cfg.limit, window: cfg.window, ...(cfg.burst === undefined ? {} : { burst: cfg.burst }), ...(v.queue === true ? { mode: 'queue' as const } : {}) },
            'limits[0]',
            new Set(),
          );
          const store = redisHttpStore({ url: endpoint.url, token: endpoint.token, prefix: `hdiff:${randomBytes(6).toString('hex')}:`, timeMode: 'client', ttlGraceMs: 600_000, deadlineMs: 5_000 });
          const states = new Map<number, unknown>();
          let now = cfg.start;
          for (let s = 0; s < steps.length; s++) {
            const step = steps[s] as (typeof steps)[number];
            now += step.dt;
            const key = `k${step.key}`;
            const op: StoreOp = { spec: limit, key, cost: step.cost, leaseId: v.algorithm === 'concurrency' ? `lease-${s}` : undefined };
            const r = algo.decide(states.get(step.key), now, step.cost, limit.params, op.leaseId);
            const want: StoreOpResult =
              r.allowed && step.cost > 0
                ? { allowed: true, consumed: true, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: 0, delayMs: r.delayMs }
                : { allowed: r.allowed, consumed: false, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, delayMs: 0 };
            if (want.consumed) {
              if (r.state === undefined) states.delete(step.key);
              else states.set(step.key, r.state);
            }
            const [full] = await store.evaluate([op], now);
            const got = figuresOf(full);
            if (full?.decidedAt !== now) throw new Error(`step ${s}: decidedAt ${String(full?.decidedAt)}, expected ${now}`);
            if (JSON.stringify(got) !== JSON.stringify(want) || got?.retryAfterMs !== want.retryAfterMs) {
              throw new Error(`step ${s} at t=${now}, key ${key}, cost ${step.cost}: expected ${show(want)}, got ${show(got)}`);
            }
            if (want.consumed && step.refund) {
              const st = states.get(step.key);
              if (st !== undefined) {
                const back = algo.refund(st, now, step.cost, limit.params, op.leaseId);
                if (back === undefined) states.delete(step.key);
                else states.set(step.key, back);
              }
              await store.refund([{ ...op, decidedAt: full.decidedAt }], now);
            }
            const st = states.get(step.key);
            const raw = await tcp.getBuffer(store.keyFor(limit.id, key));
            if (st !== undefined && algo.expiresAt(st, limit.params) > now) {
              if (raw === null) throw new Error(`step ${s}: state of ${key} missing in Redis, expected ${JSON.stringify(st)}`);
              expect(decodeState(v.algorithm, raw)).toEqual(st);
            } else if (raw !== null) {
              expect(algo.expiresAt(decodeState(v.algorithm, raw), limit.params)).toBeLessThanOrEqual(now);
            }
          }
        }),
        { numRuns: 100_000, interruptAfterTimeLimit: PER_VARIANT_MS, endOnFailure: false },
      );
      expect(runs).toBeGreaterThan(3);
    }, PER_VARIANT_MS * 4 + 30_000);
  }
});
