import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../packages/ratecontract/src/config/index.js';
import type { ConfigError } from '../../../packages/ratecontract/src/core/errors.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const schema = JSON.parse(readFileSync(fileURLToPath(new URL('../../../packages/ratecontract/schema.json', import.meta.url)), 'utf8')) as object;
const schemaAccepts = new Ajv({ strict: true, strictTypes: false, strictRequired: false }).compile(schema);

function validatorAccepts(doc: unknown): boolean {
  try {
    validateConfig(doc, { file: 'x', baseDir: '/' });
    return true;
  } catch {
    return false;
  }
}

// Values near the edges of what each option takes, valid and not.
const anyValue = fc.oneof(
  fc.constantFrom(0, 1, 3, -1, 2.5, 1e3, 429, 503, true, false, '', ' ', 'x', '15m', '15x', '0s', '1d', 'ip', 'global', 'body.phone', 'header.x-tenant', 'cookie.sid', 'gcra', 'token-bucket', 'sliding-log', 'leaky-bucket', 'fixed-window', 'concurrency', 'open', 'closed', 'degraded', 'abuse', 'shedding', 'queue', 'meter', 's', 'nope'),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
);
// A valid contract, then up to two mutations: a value replaced, a key deleted, or a misspelt key added.
const validLimitArb = fc.record(
  {
    name: fc.constantFrom('a', 'b', 'c'),
    purpose: fc.constantFrom('abuse', 'shedding'),
    algorithm: fc.constantFrom('gcra', 'token-bucket', 'sliding-log', 'fixed-window', 'concurrency'),
    limit: fc.constantFrom(1, 3, 100),
    window: fc.constantFrom('1s', '15m', 60_000),
    key: fc.constantFrom('ip', 'global', 'principal', 'body.phone', 'header.x-tenant'),
    reason: fc.constant('why'),
    shadow: fc.boolean(),
    status: fc.constantFrom(429, 503),
    onError: fc.constantFrom('closed', 'degraded'),
    failClosedAfter: fc.constantFrom(0, '5s'),
    tier: fc.constantFrom({ mode: 'allotment' }, { mode: 'pre-filter' }, { mode: 'allotment', allotmentLifetime: '1s', maxKeys: 10 }, { mode: 'pre-filter', maxKeys: 5 }),
  },
  { requiredKeys: ['name', 'purpose', 'limit', 'window'] },
);
const validDocArb = fc
  .record({
    stores: fc.constantFrom({}, { s: { type: 'memory', maxKeys: 10 } }, { s: { type: 'redis', url: 'redis://h:1', deadline: '8ms' } }),
    replicas: fc.constantFrom(1, 4),
    limits: fc.uniqueArray(validLimitArb, { maxLength: 3, selector: (l) => l.name }),
    routes: fc.constantFrom([{ match: 'GET /a', limits: [] }], [{ match: '* /static/*', limits: [] }, { match: 'GET /:id', limits: [] }]),
    http: fc.constantFrom({}, { trustProxy: ['10.0.0.0/8'], identify: { header: 'x-user' } }, { identify: { jwt: { secret: 's' } }, fields: false }),
  })
  .map((d) => ({ ...d, routes: [...d.routes, { match: 'POST /x', limits: d.limits.map((l) => l.name) }] }));

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function paths(v: Json, at: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [at];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...paths(x, [...at, i])));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...at, k]));
  return out;
}

function mutate(doc: Json, path: (string | number)[], how: 'set' | 'delete' | 'typo', value: Json): Json {
  const copy = structuredClone(doc);
  if (path.length === 0) return how === 'set' ? value : copy;
  let parent: Json = copy;
  for (const p of path.slice(0, -1)) parent = (parent as Record<string | number, Json>)[p] as Json;
  const last = path[path.length - 1] as string | number;
  const container = parent as Record<string | number, Json>;
  if (how === 'set') container[last] = value;
  else if (how === 'delete') {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete container[last];
  } else if (!Array.isArray(parent) && typeof last === 'string') container[`${last.slice(0, -1)}${last.slice(-1) === 'e' ? 'r' : 'e'}`] = container[last] as Json;
  return copy;
}

const docArb = fc
  .tuple(validDocArb, fc.array(fc.tuple(fc.nat(), fc.constantFrom<'set' | 'delete' | 'typo'>('set', 'delete', 'typo'), anyValue), { maxLength: 2 }))
  .map(([valid, mutations]) => {
    let doc = valid as unknown as Json;
    for (const [n, how, value] of mutations) {
      const all = paths(doc);
      doc = mutate(doc, all[n % all.length] as (string | number)[], how, value as Json);
    }
    return doc;
  });

describe('the schema and the validator on generated files', () => {
  it('whatever the validator accepts, the schema accepts (the schema never refuses a valid contract)', () => {
    let accepted = 0;
    let refused = 0;
    fc.assert(
      fc.property(docArb, (doc) => {
        const ok = validatorAccepts(doc);
        if (ok) {
          accepted++;
          expect(schemaAccepts(doc), JSON.stringify(schemaAccepts.errors)).toBe(true);
        } else refused++;
      }),
      fcBudget({ runs: 2000, ms: 5000 }),
    );
    expect(accepted).toBeGreaterThan(20);
    expect(refused).toBeGreaterThan(20);
  });

  it('where the schema accepts and the validator refuses, the refusal is one the schema cannot express', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(docArb, (doc) => {
        if (!schemaAccepts(doc)) return;
        try {
          validateConfig(doc, { file: 'x', baseDir: '/' });
        } catch (error) {
          const e = error as ConfigError;
          const beyondSchema =
            ['RC_UNKNOWN_STORE', 'RC_DUPLICATE_NAME', 'RC_UNKNOWN_LIMIT', 'RC_DUPLICATE_ROUTE', 'RC_BURST_BELOW_COST'].includes(e.code) ||
            (e.code === 'RC_INVALID_WINDOW' && e.message.includes('exact integer arithmetic')) ||
            (e.code === 'RC_INVALID_LIMIT' && e.message.includes('memory budget')) ||
            (e.code === 'RC_INVALID_ROUTE' && e.message.includes('appears twice')) ||
            e.option.startsWith('http.trustProxy');
          expect(beyondSchema, e.message).toBe(true);
          seen.add(e.code);
        }
      }),
      fcBudget({ runs: 2000, ms: 5000 }),
    );
    expect(seen.size).toBeGreaterThan(0);
  });
});
