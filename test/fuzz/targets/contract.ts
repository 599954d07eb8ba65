/** Contract files, YAML and JSON: `parseConfig` (YAML parse, validation, the library's compiler) and the audit of what it accepts. */
import fc from 'fast-check';
import { stringify } from 'yaml';
import { docContracts, filesIn } from '../corpus.js';
import { EDGE_NUMBERS, HOSTILE_KEYS } from '../mutate.js';
import type { FuzzTarget } from '../harness.js';
import { auditContract, ConfigFileError, parseConfig } from '../subjects.js';
import { anyValue, nameText, own, withFaults, yamlWithAliases } from './shapes.js';

const duration = fc.tuple(fc.integer({ min: 1, max: 120 }), fc.constantFrom('ms', 's', 'm', 'h', 'd')).map(([n, u]) => `${n}${u}`);
const opt = <T>(arb: fc.Arbitrary<T>, weight = 1): fc.Arbitrary<readonly [] | readonly [T]> =>
  fc.oneof({ weight: 3 - weight, arbitrary: fc.constant([] as const) }, { weight, arbitrary: arb.map((v) => [v] as const) });

const KEYS = ['ip', 'principal', 'global', 'header.x-tenant', 'query.id', 'body.phone', 'header.__proto__', 'body.constructor', 'query.toString'] as const;

/** A valid limit definition (as far as the options it draws go together) named `name`, on one of `stores`. */
function limitArb(name: string, stores: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .record({
      purpose: fc.constantFrom('abuse', 'shedding'),
      algorithm: fc.constantFrom('fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'),
      limit: fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 1, max: 1000 }) }, { weight: 1, arbitrary: fc.constantFrom(10_000_000, 2 ** 30) }),
      window: duration,
      key: fc.constantFrom(...KEYS),
      burst: opt(fc.integer({ min: 1, max: 1000 })),
      onError: opt(fc.constantFrom('open', 'degraded', 'closed')),
      reason: opt(fc.string({ maxLength: 20 })),
      shadow: opt(fc.boolean()),
      store: stores.length === 0 ? fc.constant([] as const) : opt(fc.constantFrom(...stores)),
      status: opt(fc.constantFrom(429, 503)),
    })
    .map((r) => {
      const bucket = r.algorithm === 'token-bucket' || r.algorithm === 'leaky-bucket' || r.algorithm === 'gcra';
      const entries: Array<readonly [string, unknown]> = [['name', name], ['purpose', r.purpose], ['algorithm', r.algorithm], ['limit', r.limit], ['key', r.key]];
      entries.push(['window', r.window]);
      if (bucket && r.burst[0] !== undefined) entries.push(['burst', r.burst[0]]);
      if (r.onError.length > 0) {
        entries.push(['onError', r.onError[0]]);
        if (r.onError[0] === 'open' && r.purpose === 'abuse') entries.push(['acknowledgeFailOpen', 'the page must stay up']);
      }
      for (const k of ['reason', 'shadow', 'store', 'status'] as const) if (r[k].length > 0) entries.push([k, r[k][0]]);
      return own(entries);
    });
}

const storeArb = fc.oneof(
  fc.record({ type: fc.constant('memory'), maxKeys: fc.integer({ min: 1, max: 10 ** 6 }) }, { requiredKeys: ['type'] }),
  fc.record(
    { type: fc.constant('redis'), url: fc.constantFrom('redis://127.0.0.1:6379', 'rediss://h:1/0', 'redis://:pw@[::1]:1'), deadline: duration, prefix: fc.constantFrom('rc:', 'x'), timeMode: fc.constantFrom('server', 'client'), breaker: fc.record({ failureThreshold: fc.integer({ min: 1, max: 10 }), cooldown: duration }, { requiredKeys: [] }) },
    { requiredKeys: ['type', 'url'] },
  ),
);

const httpArb = fc.record(
  {
    trustProxy: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom('loopback', '10.0.0.0/8', '::/0'), fc.array(fc.constantFrom('uniquelocal', '::ffff:10.0.0.0/104', 'loopback', '192.0.2.1'), { maxLength: 3 })),
    forwardedHeader: fc.constantFrom('x-forwarded-for', 'forwarded'),
    ipv6Prefix: fc.integer({ min: 0, max: 128 }),
    ipv4Prefix: fc.integer({ min: 0, max: 32 }),
    advertise: fc.constantFrom('always', 'authenticated', 'never'),
    maxBodyBytes: fc.integer({ min: 1, max: 10 ** 6 }),
  },
  { requiredKeys: [] },
);

const routeMatch = fc
  .tuple(fc.constantFrom('GET', 'POST', '*', 'HEAD', 'DELETE'), fc.array(fc.constantFrom('otp', 'send', ':id', 'a.b', '__proto__', 'constructor', '%2e', 'x'), { maxLength: 3 }), fc.boolean())
  .map(([m, p, star]) => `${m} /${[...p, ...(star ? ['*'] : [])].join('/')}`);

/** A valid contract document: stores, limits on them, routes naming the limits, http options. */
export const validContract: fc.Arbitrary<Record<string, unknown>> = fc
  .tuple(fc.uniqueArray(nameText.filter((n) => /^[a-z0-9_-]{1,64}$/.test(n)), { minLength: 1, maxLength: 4 }), fc.uniqueArray(fc.constantFrom('shared', 'local', 'abuse', 'constructor', 'tostring'), { maxLength: 2 }))
  .chain(([names, storeNames]) =>
    fc.record({
      stores: fc.tuple(...storeNames.map(() => storeArb)).map((ss) => own(ss.map((s, i) => [storeNames[i] as string, s]))),
      limits: fc.tuple(...names.map((n) => limitArb(n, storeNames))),
      routes: fc.uniqueArray(routeMatch, { maxLength: 4 }).chain((ms) => fc.tuple(...ms.map((m) => fc.shuffledSubarray(names).map((ls) => ({ match: m, limits: ls }))))),
      http: opt(httpArb),
    }),
  )
  .map(({ http, stores, ...rest }) => own([...(Object.keys(stores).length > 0 ? [['stores', stores] as const] : []), ...Object.entries(rest), ...(http.length > 0 ? [['http', http[0]] as const] : [])]));

/** The document as a file: block YAML, flow YAML, or JSON. */
export function asFile(doc: unknown, form: 'yaml' | 'flow' | 'json'): string {
  return form === 'json' ? JSON.stringify(doc, null, 1) : stringify(doc, form === 'flow' ? { collectionStyle: 'flow' } : {});
}

/** Contract files: valid, or with up to two structural faults. */
export const contractText: fc.Arbitrary<string> = fc.tuple(withFaults(validContract), fc.constantFrom<'yaml' | 'flow' | 'json'>('yaml', 'flow', 'json')).map(([doc, form]) => asFile(doc, form));

export const contractTarget: FuzzTarget = {
  name: 'contract',
  arbitrary: fc.oneof({ weight: 8, arbitrary: contractText }, { weight: 2, arbitrary: yamlWithAliases(withFaults(validContract, 1)) }, { weight: 1, arbitrary: anyValue.map((v) => stringify(v)) }),
  seeds: () => [
    ...filesIn('test/unit/config/fixtures', ['.yaml', '.yml', '.json']),
    ...filesIn('test/unit/cli/fixtures', ['.yaml']),
    ...filesIn('examples', ['ratecontract.yaml']),
    ...docContracts(),
  ],
  dictionary: [
    ...HOSTILE_KEYS,
    ...EDGE_NUMBERS,
    ': ', '- ', '\n  ', '{', '}', '[', ']', ',', '&a ', '*a', '<<: ', '!!str ', '!!binary ', '? ', '|\n', '#', '"', "'", '\\u0000',
    'limits', 'routes', 'stores', 'http', 'window', 'burst', 'key', 'purpose', 'onError', 'trustProxy', 'match', 'store', 'tier', 'plans', 'plan',
  ],
  run: (input) => {
    const config = parseConfig(input, { file: 'fuzz.yaml', baseDir: '/nonexistent' });
    // What the admin port's /contract and `audit` print of an accepted contract.
    return { config, audit: auditContract(config) };
  },
  allowed: (error) => error instanceof ConfigFileError && error.file === 'fuzz.yaml',
  // A YAML document of up to 16 KiB: parse, validate, compile (and build the engine or the audit) on a shared machine.
  maxMs: 250,
};
