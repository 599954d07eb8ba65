import fc from 'fast-check';
import { parseList, serializeList, type Item } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { createLimiter, ManualClock, memoryStore, type AlgorithmName, type Decision, type LimitDefinition, type Limiter, type RequestContext } from '../../../packages/ratecontract/src/index.js';
import { mapDecision, resolveResponseOptions, type HttpResponse, type ResponseOptions } from '../../../packages/ratecontract/src/http/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const POLICY_PARAMS = new Set(['q', 'qu', 'w', 'pk']);
const LIMIT_PARAMS = new Set(['r', 't', 'pk']);

function isNonNegativeInteger(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/**
 * The conformance table of draft-ietf-httpapi-ratelimit-headers-10 as this
 * library applies it. Returns the parsed items so callers can check more.
 */
function conform(r: HttpResponse): { policies: Item[]; current: Item[] } {
  const policyText = r.headers['RateLimit-Policy'];
  const currentText = r.headers['RateLimit'];
  if (policyText === undefined) {
    expect(currentText).toBeUndefined();
    return { policies: [], current: [] };
  }
  const policies = parseList(policyText) as Item[];
  // canonical serialisation: what we sent is what the library would send for what it parsed
  expect(serializeList(policies)).toBe(policyText);
  expect(policies.length).toBeGreaterThan(0);
  const names = new Set<string>();
  for (const [name, params] of policies) {
    expect(typeof name).toBe('string'); // draft-10: the Item value MUST be a String
    expect(names.has(name as string)).toBe(false);
    names.add(name as string);
    for (const k of params.keys()) expect(POLICY_PARAMS.has(k)).toBe(true);
    expect(isNonNegativeInteger(params.get('q'))).toBe(true);
    if (params.has('w')) {
      expect(isNonNegativeInteger(params.get('w'))).toBe(true);
      expect(params.get('w')).toBeGreaterThanOrEqual(1);
    }
    if (params.has('qu')) expect(['requests', 'content-bytes', 'concurrent-requests']).toContain(params.get('qu'));
    if (params.has('pk')) expect(params.get('pk')).toBeInstanceOf(ArrayBuffer);
  }
  let current: Item[] = [];
  if (currentText !== undefined) {
    current = parseList(currentText) as Item[];
    expect(serializeList(current)).toBe(currentText);
    for (const [name, params] of current) {
      expect(typeof name).toBe('string');
      // identifiers match between the two fields, and so do partition keys
      expect(names.has(name as string)).toBe(true);
      const policy = policies.find((p) => p[0] === name) as Item;
      for (const k of params.keys()) expect(LIMIT_PARAMS.has(k)).toBe(true);
      expect(isNonNegativeInteger(params.get('r'))).toBe(true);
      if (params.has('t')) expect(isNonNegativeInteger(params.get('t'))).toBe(true);
      expect(params.get('r') as number).toBeLessThanOrEqual(policy[1].get('q') as number);
      const pk: unknown = params.get('pk');
      const ppk: unknown = policy[1].get('pk');
      expect(pk === undefined).toBe(ppk === undefined);
      if (pk !== undefined) expect(Buffer.from(pk as ArrayBuffer).equals(Buffer.from(ppk as ArrayBuffer))).toBe(true);
    }
  }
  return { policies, current };
}

function map(limiter: Limiter, decision: Decision, ctx: RequestContext, options: ResponseOptions = {}): HttpResponse {
  return mapDecision(decision, { limits: limiter.limits, authenticated: ctx.principal !== undefined, keyOf: (l) => l.key(ctx) }, resolveResponseOptions({ advertise: 'always', advertiseCapacity: true, ...options }));
}

const ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'];

/** One request of a table row: the decision, the response and its parsed fields. */
interface Step {
  readonly d: Decision;
  readonly r: HttpResponse;
  readonly policies: Item[];
  readonly current: Item[];
}

/** The parameters of the item named `name`, as a plain object (`pk` shown as `true` when present). */
function params(items: readonly Item[], name: string): Record<string, unknown> | undefined {
  const item = items.find((i) => i[0] === name);
  if (item === undefined) return undefined;
  return Object.fromEntries([...item[1].entries()].map(([k, v]) => [k, k === 'pk' ? v instanceof ArrayBuffer : v]));
}

describe('RateLimit / RateLimit-Policy conformance table', () => {
  /** Each row states its claim in `label` and checks exactly that in `then`; every response also passes `conform`. */
  const rows: Array<{ label: string; limits: LimitDefinition[]; requests: number; cost?: number; options?: ResponseOptions; then: (steps: readonly Step[]) => void }> = [
    ...ALGORITHMS.map((algorithm) => ({
      label: `${algorithm}, fresh`,
      limits: [{ name: 'p', purpose: 'abuse' as const, algorithm, limit: 5, window: '1m' as const, key: 'principal' as const }],
      requests: 1,
      then: ([s]: readonly Step[]) => {
        const step = s as Step;
        expect(step.r.status).toBe(200);
        // A concurrency limit has no window: it says what it counts instead.
        const shape = algorithm === 'concurrency' ? { qu: 'concurrent-requests' } : { w: 60 };
        expect(params(step.policies, 'p')).toEqual({ q: 5, ...shape, pk: true });
        expect(params(step.current, 'p')).toMatchObject({ r: 4, pk: true });
      },
    })),
    ...ALGORITHMS.map((algorithm) => ({
      label: `${algorithm}, exhausted`,
      limits: [{ name: 'p', purpose: 'abuse' as const, algorithm, limit: 2, window: '90s' as const, key: 'principal' as const }],
      requests: 4,
      then: (steps: readonly Step[]) => {
        expect(steps.map((x) => x.r.status)).toEqual([200, 200, 429, 429]);
        expect(steps.map((x) => params(x.current, 'p')?.['r'])).toEqual([1, 0, 0, 0]);
        for (const x of steps.slice(2)) {
          // A rejection tells when to come back, in both places, consistently.
          const t = params(x.current, 'p')?.['t'];
          expect(isNonNegativeInteger(t) && t >= 1).toBe(true);
          expect(Number(x.r.headers['Retry-After'])).toBe(Math.ceil(x.d.retryAfterMs / 1000));
          expect(Number(x.r.headers['Retry-After'])).toBeGreaterThanOrEqual(t as number);
        }
      },
    })),
    {
      label: 'sub-second window rounds w up to 1',
      limits: [{ name: 'fast', purpose: 'shedding', limit: 3, window: '250ms', key: 'ip' }],
      requests: 2,
      then: (steps) => {
        for (const x of steps) expect(params(x.policies, 'fast')?.['w']).toBe(1);
      },
    },
    {
      label: 'odd window rounds w up',
      limits: [{ name: 'odd', purpose: 'abuse', limit: 3, window: 1500, key: 'ip' }],
      requests: 5,
      then: (steps) => {
        for (const x of steps) expect(params(x.policies, 'odd')?.['w']).toBe(2);
        expect(steps.map((x) => x.r.status)).toEqual([200, 200, 200, 429, 429]);
      },
    },
    {
      label: 'two policies',
      limits: [{ name: 'per-user', purpose: 'abuse', limit: 3, window: '1m', key: 'principal' }, { name: 'global', purpose: 'shedding', limit: 100, window: '1s', key: 'global' }],
      requests: 4,
      then: (steps) => {
        for (const x of steps) expect(x.policies.map((i): unknown => i[0])).toEqual(['per-user', 'global']);
        expect(params((steps[0] as Step).policies, 'per-user')).toMatchObject({ q: 3, w: 60 });
        expect(params((steps[0] as Step).policies, 'global')).toMatchObject({ q: 100, w: 1 });
        expect(params((steps[0] as Step).current, 'per-user')?.['r']).toBe(2);
        expect(params((steps[0] as Step).current, 'global')?.['r']).toBe(99);
      },
    },
    {
      label: 'cost above burst',
      limits: [{ name: 'bytes', purpose: 'abuse', limit: 4, window: '1m', key: 'principal' }],
      requests: 1,
      cost: 5,
      then: ([s]) => {
        const step = s as Step;
        // It can never fit: 413, no Retry-After, and nothing was consumed.
        expect([step.d.allowed, step.d.retryAfterMs]).toEqual([false, Infinity]);
        expect(step.r.status).toBe(413);
        expect(step.r.headers['Retry-After']).toBeUndefined();
        expect(params(step.current, 'bytes')?.['r']).toBe(4);
      },
    },
    {
      label: 'window cap',
      limits: [{ name: 'daily', purpose: 'abuse', limit: 1000, window: '1d', key: 'principal' }],
      requests: 3,
      options: { windowCap: '1h' },
      then: (steps) => {
        // The policy still says 1000 a day; the advertised remaining is capped at ceil(1000 * 1h / 1d) = 42 (997 remain).
        for (const x of steps) {
          expect(params(x.policies, 'daily')).toMatchObject({ q: 1000, w: 86_400 });
          expect(params(x.current, 'daily')?.['r']).toBe(42);
        }
        expect((steps[2] as Step).d.results[0]?.remaining).toBe(997);
      },
    },
    {
      label: 'no partition keys',
      limits: [{ name: 'p', purpose: 'abuse', limit: 2, window: '1m', key: 'principal' }],
      requests: 3,
      options: { partitionKeys: false },
      then: (steps) => {
        for (const x of steps) {
          expect(x.policies).toHaveLength(1);
          expect(x.current).toHaveLength(1);
          expect(params(x.policies, 'p')).not.toHaveProperty('pk');
          expect(params(x.current, 'p')).not.toHaveProperty('pk');
        }
      },
    },
  ];

  it.each(rows)('$label', async ({ limits, requests, cost, options, then }) => {
    const clock = new ManualClock(1_700_000_000_123);
    const limiter = createLimiter({ limits, clock, defaultStore: memoryStore() });
    const ctx: RequestContext = { principal: 'alice', ip: '203.0.113.9' };
    const steps: Step[] = [];
    for (let i = 0; i < requests; i++) {
      const d = await limiter.check(ctx, cost === undefined ? undefined : { cost });
      const r = map(limiter, d, ctx, options);
      const { policies, current } = conform(r);
      if (!d.allowed && Number.isFinite(d.retryAfterMs)) {
        const ra = Number(r.headers['Retry-After']);
        for (const [, p] of current) if (p.has('t')) expect(ra).toBeGreaterThanOrEqual(p.get('t') as number);
      }
      steps.push({ d, r, policies, current });
      clock.advance(7);
    }
    then(steps);
  });
});

describe('Retry-After property', () => {
  const limitArb = fc.record({
    algorithm: fc.constantFrom(...ALGORITHMS),
    limit: fc.integer({ min: 1, max: 6 }),
    window: fc.constantFrom(1, 999, 1000, 1001, 2500, 60_000, 86_400_000),
    key: fc.constantFrom('principal' as const, 'global' as const, 'ip' as const),
  });
  const stepArb = fc.record({ dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 0, max: 100_000_000 })), cost: fc.integer({ min: 1, max: 8 }) });

  it('Retry-After == ceil(retryAfterMs / 1000) and >= t of every violated policy; fields conform', async () => {
    let rejected = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(limitArb, { minLength: 1, maxLength: 3 }), fc.array(stepArb, { minLength: 1, maxLength: 25 }), fc.constantFrom<'draft-10' | 'draft-7' | 'draft-6'>('draft-10', 'draft-7', 'draft-6'), async (defs, steps, shape) => {
        const clock = new ManualClock(1_700_000_000_000);
        const limits: LimitDefinition[] = defs.map((d, i) => ({ name: `l${i}`, purpose: 'abuse', ...d }));
        const limiter = createLimiter({ limits, clock, defaultStore: memoryStore() });
        const ctx: RequestContext = { principal: 'p', ip: '198.51.100.1' };
        for (const step of steps) {
          clock.advance(step.dt);
          const d = await limiter.check(ctx, { cost: step.cost });
          const r = map(limiter, d, ctx, { fields: shape });
          if (shape === 'draft-10') conform(r);
          if (d.allowed) {
            expect(r.status).toBe(200);
            expect(r.headers['Retry-After']).toBeUndefined();
            continue;
          }
          rejected++;
          if (!Number.isFinite(d.retryAfterMs)) {
            expect(r.status).toBe(413);
            expect(r.headers['Retry-After']).toBeUndefined();
            continue;
          }
          expect([429, 503]).toContain(r.status);
          const ra = Number(r.headers['Retry-After']);
          expect(ra).toBe(Math.ceil(d.retryAfterMs / 1000));
          expect(String(ra)).toMatch(/^[0-9]+$/);
          for (const res of d.results) {
            if (!res.allowed && !res.shadow) expect(ra).toBeGreaterThanOrEqual(Math.ceil(res.retryAfterMs / 1000));
          }
          if (shape === 'draft-10') {
            for (const [, p] of parseList(r.headers['RateLimit'] ?? '')) expect(ra).toBeGreaterThanOrEqual((p.get('t') as number | undefined) ?? 0);
          } else {
            expect(ra).toBeGreaterThanOrEqual(Number(/reset=(\d+)/.exec(r.headers['RateLimit'] ?? '')?.[1] ?? r.headers['RateLimit-Reset'] ?? 0));
          }
          await d.release();
        }
      }),
      fcBudget({ runs: 150, ms: 4000 }),
    );
    expect(rejected).toBeGreaterThan(0);
  });
});
