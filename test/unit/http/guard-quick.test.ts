/**
 * `HttpGuard.quick` (the one-step common case the node:http guard takes):
 * it applies only where it cannot differ from `decide`, and where it applies,
 * `quick` followed by `conclude` answers every request exactly as `decide`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HttpGuard, Unexpected, type GuardOptions, type GuardResult, type RequestFacts } from '../../../packages/ratecontract/src/http/guard.js';
import { createLimiter, ManualClock, memoryStore, type AlgorithmName, type Decision, type LimitDefinition, type Store } from '../../../packages/ratecontract/src/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

type Req = { readonly id: number };

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra'];

function def(name: string, algorithm: AlgorithmName, key: LimitDefinition['key'], queue: boolean): LimitDefinition {
  return {
    name,
    purpose: key === 'global' ? 'shedding' : 'abuse',
    algorithm,
    limit: 3,
    window: 1000,
    key,
    ...(['token-bucket', 'leaky-bucket', 'gcra'].includes(algorithm) ? { burst: 4 } : {}),
    ...(algorithm === 'leaky-bucket' && queue ? { mode: 'queue' as const } : {}),
  };
}

function facts(remoteAddress: string, url: string): RequestFacts<Req> {
  return { req: { id: 1 }, remoteAddress, method: 'GET', url, headers: {} };
}

/** `decide`'s answer, with the delay of queue mode skipped (both guards get the same injected delay). */
function viaDecide(guard: HttpGuard<Req>, f: RequestFacts<Req>): Promise<GuardResult> {
  return new Promise((resolve) => guard.decide(f, undefined, resolve));
}

async function viaQuick(guard: HttpGuard<Req>, f: RequestFacts<Req>): Promise<GuardResult | 'not quick'> {
  const q = guard.quick(f.remoteAddress, f.method, f.url);
  if (q === undefined || q instanceof Unexpected) return 'not quick';
  if (q.allowed && q.delayMs <= 0) return { kind: 'proceed', decision: q, responseFields: {}, holdsSettlements: false };
  return new Promise((resolve) => guard.conclude(q, f, resolve));
}

function view(r: GuardResult): unknown {
  const d: Decision | undefined = r.decision;
  return {
    kind: r.kind,
    decision: d && { allowed: d.allowed, status: d.status, outcome: d.outcome, limit: d.limitName, retryAfterMs: d.retryAfterMs, delayMs: d.delayMs },
    responseFields: r.kind === 'proceed' ? r.responseFields : undefined,
    response: r.kind === 'respond' ? r.response : undefined,
  };
}

const noDelay: GuardOptions<Req>['delay'] = () => Promise.resolve();

describe('HttpGuard.quick', () => {
  it('answers exactly as decide, allowed or rejected, in every algorithm (property)', async () => {
    let compared = 0;
    let rejected = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...ALGORITHMS), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        fc.array(fc.record({ step: fc.integer({ min: 0, max: 700 }), ip: fc.constantFrom('203.0.113.1', '2001:db8::1', '::ffff:198.51.100.2'), q: fc.constantFrom('', '?k=a', '?k=b&k=c') }), { maxLength: 30 }),
        async (algorithms, queue, steps) => {
          const limits = algorithms.map((a, i) => def(`l${i}`, a, i === 0 ? 'ip' : i === 1 ? 'query.k' : 'global', queue));
          const clocks = [new ManualClock(1_700_000_000_000), new ManualClock(1_700_000_000_000)];
          const [a, b] = clocks.map((clock) => new HttpGuard<Req>(createLimiter({ clock, defaultStore: memoryStore(), limits }), { delay: noDelay }));
          for (const s of steps) {
            for (const c of clocks) c.advance(s.step);
            const f = facts(s.ip, `/p${s.q}`);
            const quick = await viaQuick(a as HttpGuard<Req>, f);
            expect(quick).not.toBe('not quick');
            const general = await viaDecide(b as HttpGuard<Req>, f);
            expect(view(quick as GuardResult)).toEqual(view(general));
            if (general.kind === 'respond') rejected++;
            compared++;
          }
        },
      ),
      fcBudget({ ms: 2000 }),
    );
    expect(compared).toBeGreaterThan(100);
    expect(rejected).toBeGreaterThan(10);
  });

  it('does not apply, deciding nothing, where decide could answer differently', () => {
    const ipLimit = { name: 'one', purpose: 'abuse', limit: 1, window: '1h', key: 'ip' } as const;
    const asyncOnly = (): Store => {
      const inner = memoryStore();
      return { kind: 'async-memory', evaluate: (ops, now) => inner.evaluate(ops, now), refund: (ops, now) => inner.refund(ops, now), release: (op, now) => inner.release(op, now) };
    };
    const cases: Array<[string, LimitDefinition[], GuardOptions<Req>, Store | undefined]> = [
      ['identify', [ipLimit], { identify: () => 'u' }, undefined],
      ['limiterFor', [ipLimit], { limiterFor: () => undefined }, undefined],
      ['cost', [ipLimit], { cost: () => 1 }, undefined],
      ['readBody', [ipLimit], { readBody: true }, undefined],
      ['trustProxy', [ipLimit], { trustProxy: 'loopback' }, undefined],
      ["advertise: 'always'", [ipLimit], { advertise: 'always' }, undefined],
      ['a header key', [{ ...ipLimit, key: 'header.x-k' }], {}, undefined],
      ['a key function', [{ ...ipLimit, key: () => 'k' }], {}, undefined],
      ['a body key', [{ ...ipLimit, key: 'body.k' }], {}, undefined],
      ['a concurrency limit', [{ name: 'c', purpose: 'shedding', algorithm: 'concurrency', limit: 1, window: '30s', key: 'global' }], {}, undefined],
      ['an asynchronous store', [ipLimit], {}, asyncOnly()],
    ];
    for (const [why, limits, options, store] of cases) {
      const limiter = createLimiter({ limits, ...(store ? { defaultStore: store } : {}) });
      const guard = new HttpGuard<Req>(limiter, options);
      expect(guard.quick('203.0.113.9', 'GET', '/'), why).toBeUndefined();
    }
    // And where it applies it decides: the second request of a limit of 1 is rejected.
    const guard = new HttpGuard<Req>(createLimiter({ limits: [ipLimit] }));
    expect((guard.quick('203.0.113.9', 'GET', '/') as Decision).allowed).toBe(true);
    expect((guard.quick('203.0.113.9', 'GET', '/') as Decision).allowed).toBe(false);
  });
});
