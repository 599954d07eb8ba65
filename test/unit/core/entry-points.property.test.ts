/**
 * Every entry point decides alike. Random chains (1 to 3 limits of any
 * algorithm, shadow or not, queue mode), random requests (keys absent or
 * throwing, costs) and store failures go through:
 *
 * - `check()` and `checkSync()` on the memory store (the single-op fast path
 *   when the chain has one limit),
 * - `check()` and `checkSync()` on the same store without its single-op entry
 *   (the general synchronous path),
 * - `check()` on the same store behind promises only (the asynchronous path),
 *
 * and each must give the same whole decision (as JSON), publish the same
 * decision and key-error events, and run every key function exactly once
 * per check (never for a limit an allow or deny list decided: lists match
 * at random, the limiter's deny and allow lists and the first limit's allow
 * list).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CHANNELS,
  createLimiter,
  ManualClock,
  MemoryStore,
  type AlgorithmName,
  type Decision,
  type LimitDefinition,
  type Limiter,
  type RequestContext,
  type Store,
  type StoreOp,
  type StoreOpResult,
  type SyncStore,
} from '../../../packages/ratecontract/src/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'];
const T0 = 1_700_000_000_000;

/** A real memory store that fails every call while `failing` is set (the fast path runs on it, as on any memory store). */
class FailingMemoryStore extends MemoryStore {
  failing = false;
  guard(): void {
    if (this.failing) throw new Error('ECONNRESET');
  }
  override evaluateSync(ops: readonly StoreOp[], now: number): readonly StoreOpResult[] {
    this.guard();
    return super.evaluateSync(ops, now);
  }
  override decideOne(...args: Parameters<MemoryStore['decideOne']>): void {
    this.guard();
    super.decideOne(...args);
  }
}

/** The switch the lanes share with their store. */
type Failing = FailingMemoryStore;

function fastStore(f: Failing): Store {
  return f;
}

function generalStore(f: Failing): SyncStore {
  return {
    kind: 'memory',
    evaluate: (ops, now) => Promise.resolve(f.evaluateSync(ops, now)),
    evaluateSync: (ops, now) => f.evaluateSync(ops, now),
    refund: (ops, now) => f.refund(ops, now),
    release: (op, now) => f.release(op, now),
  };
}

function asyncStore(f: Failing): Store {
  return {
    kind: 'memory',
    deadlineMs: 10_000,
    // A breaker that never opens: its job here is to decide like the synchronous stores, which have none.
    breaker: { failureThreshold: 1_000_000, minimumCalls: 1_000_000 },
    evaluate: async (ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> => {
      await Promise.resolve();
      return f.evaluateSync(ops, now);
    },
    refund: (ops, now) => f.refund(ops, now),
    release: (op, now) => f.release(op, now),
  };
}

interface LimitSpec {
  readonly algorithm: AlgorithmName;
  readonly shadow: boolean;
  readonly queue: boolean;
  readonly limit: number;
  /** 'ip': the built-in spec; 'fn': a key function that may return undefined or throw. */
  readonly key: 'ip' | 'fn';
  /** Whether the limit's cost is a function of the request (which may throw or return an invalid cost). */
  readonly costFn: boolean;
  /** `count: 'failures'` (not on concurrency). */
  readonly failures: boolean;
}

interface Step {
  readonly advance: number;
  readonly ip: string;
  /** What a key function does for this request. */
  readonly fn: 'key' | 'absent' | 'throw';
  readonly cost: number | undefined;
  readonly fail: boolean;
  /** Which list matches this request: none, the limiter's deny or allow list, or the first limit's allow list. */
  readonly list: 'none' | 'deny' | 'allow' | 'allow-l0';
  /** What a cost function returns for this request ('throw': it throws). */
  readonly fnCost: number | 'throw';
  /** How the decision is settled after the check. */
  readonly settle: 'success' | 'failure' | 'none';
}

const limitSpec = fc.record({
  algorithm: fc.constantFrom(...ALGORITHMS),
  shadow: fc.boolean(),
  queue: fc.boolean(),
  limit: fc.integer({ min: 1, max: 4 }),
  key: fc.constantFrom<'ip' | 'fn'>('ip', 'fn'),
  costFn: fc.boolean(),
  failures: fc.boolean(),
});
const step = fc.record({
  advance: fc.integer({ min: 0, max: 600 }),
  ip: fc.constantFrom('a', 'b'),
  fn: fc.constantFrom<'key' | 'absent' | 'throw'>('key', 'key', 'absent', 'throw'),
  cost: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
  fail: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
  list: fc.constantFrom<Step['list']>('none', 'none', 'none', 'deny', 'allow', 'allow-l0'),
  fnCost: fc.constantFrom<number | 'throw'>(1, 1, 2, 9, 0, 1.5, 'throw'),
  settle: fc.constantFrom<Step['settle']>('success', 'failure', 'none'),
});

/** One entry point under test: its limiter, how it checks, and the key-function calls it made. */
interface Lane {
  readonly name: string;
  readonly limiter: Limiter;
  readonly failing: Failing;
  readonly calls: number[];
  check(ctx: RequestContext, cost: number | undefined): Promise<Decision>;
}

function definitions(specs: readonly LimitSpec[], calls: number[], current: () => Step): LimitDefinition[] {
  return specs.map((l, i) => ({
    name: `l${i}`,
    purpose: 'shedding',
    algorithm: l.algorithm,
    limit: l.limit,
    window: 1000,
    shadow: l.shadow,
    ...(i === 0 ? { allow: [() => current().list === 'allow-l0'] } : {}),
    ...(l.failures && l.algorithm !== 'concurrency' ? { count: 'failures' as const } : {}),
    ...(l.costFn
      ? {
          cost: (): number => {
            const c = current().fnCost;
            if (c === 'throw') throw new Error('cannot price');
            return c;
          },
        }
      : {}),
    ...(l.algorithm === 'leaky-bucket' && l.queue ? { mode: 'queue' as const } : {}),
    ...(['token-bucket', 'leaky-bucket', 'gcra'].includes(l.algorithm) ? { burst: l.limit + 1 } : {}),
    key:
      l.key === 'ip'
        ? 'ip'
        : (ctx: RequestContext): string | undefined => {
            calls[i] = (calls[i] ?? 0) + 1;
            const s = current();
            if (s.fn === 'throw') throw new Error('token expired');
            return s.fn === 'absent' ? undefined : `fn-${ctx.ip ?? ''}`;
          },
  }));
}

describe('every entry point makes the same decision, events and key-function calls', () => {
  it('on random chains, requests and store failures', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(limitSpec, { minLength: 1, maxLength: 3 }), fc.array(step, { minLength: 1, maxLength: 25 }), async (specs, steps) => {
        let current: Step = steps[0] as Step;
        const clock = new ManualClock(T0);
        const lanes: Lane[] = [];
        const make = (name: string, storeOf: (f: Failing) => Store, how: 'check' | 'sync'): void => {
          const failing = new FailingMemoryStore();
          const calls: number[] = [];
          const limiter = createLimiter({
            clock,
            defaultStore: storeOf(failing),
            limits: definitions(specs, calls, () => current),
            deny: [() => current.list === 'deny'],
            allow: [() => current.list === 'allow'],
          });
          lanes.push({
            name,
            limiter,
            failing,
            calls,
            check: (ctx, cost) => {
              const options = cost === undefined ? undefined : { cost };
              if (how === 'check') return limiter.check(ctx, options);
              const d = limiter.checkSync(ctx, options);
              if (d === undefined) throw new Error(`${name}: checkSync declined an in-process store`);
              return Promise.resolve(d);
            },
          });
        };
        make('fast check', fastStore, 'check');
        make('fast checkSync', fastStore, 'sync');
        make('general check', generalStore, 'check');
        make('general checkSync', generalStore, 'sync');
        make('async check', asyncStore, 'check');

        const events: Array<{ lane: number; channel: string; payload: string }> = [];
        let active = -1;
        const onDecision = (m: unknown): void => void events.push({ lane: active, channel: 'decision', payload: JSON.stringify((m as { decision: Decision }).decision) });
        const onKeyError = (m: unknown): void => void events.push({ lane: active, channel: 'key-error', payload: (m as { limitName: string }).limitName });
        const onCostError = (m: unknown): void => void events.push({ lane: active, channel: 'cost-error', payload: JSON.stringify({ limit: (m as { limitName: string }).limitName, cost: (m as { cost: number }).cost }) });
        subscribe(CHANNELS.decision, onDecision);
        subscribe(CHANNELS.keyError, onKeyError);
        subscribe(CHANNELS.costError, onCostError);
        try {
          for (const s of steps) {
            current = s;
            clock.advance(s.advance);
            const decisions: string[] = [];
            for (const [j, lane] of lanes.entries()) {
              lane.failing.failing = s.fail;
              const before = [...lane.calls];
              active = j;
              const d = await lane.check({ ip: s.ip }, s.cost);
              decisions.push(JSON.stringify(d));
              if (s.settle !== 'none') await d.settle(s.settle);
              // Each key function ran exactly once for this check (never for a limit the lists decided).
              specs.forEach((l, i) => {
                const listed = s.list === 'deny' || s.list === 'allow' || (s.list === 'allow-l0' && i === 0);
                if (l.key === 'fn') expect((lane.calls[i] ?? 0) - (before[i] ?? 0), `${lane.name}: key function l${i}`).toBe(listed ? 0 : 1);
              });
            }
            for (const [j, d] of decisions.entries()) expect(d, `${(lanes[j] as Lane).name} vs fast check`).toBe(decisions[0]);
          }
        } finally {
          unsubscribe(CHANNELS.decision, onDecision);
          unsubscribe(CHANNELS.keyError, onKeyError);
          unsubscribe(CHANNELS.costError, onCostError);
          await Promise.all(lanes.map((lane) => lane.limiter.close()));
        }
        // The same events, in the same order, from every lane.
        const perLane = lanes.map((_, j) => events.filter((e) => e.lane === j).map((e) => `${e.channel}:${e.payload}`));
        for (const [j, seq] of perLane.entries()) expect(seq, `${(lanes[j] as Lane).name} events`).toEqual(perLane[0]);
      }),
      fcBudget({ runs: 150, ms: 8000 }),
    );
  });
});
