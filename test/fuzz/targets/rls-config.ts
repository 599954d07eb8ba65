/** envoyproxy/ratelimit YAML (`ratecontract rls` config files): `parseRlsConfig`, then the engine that serves the rules it accepts. */
import fc from 'fast-check';
import { stringify } from 'yaml';
import { docRlsConfigs } from '../corpus.js';
import { EDGE_NUMBERS, HOSTILE_KEYS } from '../mutate.js';
import type { FuzzTarget } from '../harness.js';
import { ConfigFileError, memoryStore, parseRlsConfig, RlsEngine } from '../subjects.js';
import { durationText } from './duration.js';
import { anyValue, mapping, near, own, yamlWithAliases } from './shapes.js';

const UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'year', 'SECOND', 'Minute', 'fortnight', ''] as const;
const descriptorKey = fc.oneof(fc.constantFrom('to_number', 'message_type', 'remote_address', 'generic_key', 'k', ...HOSTILE_KEYS), fc.string({ maxLength: 6 }));
const descriptorValue = fc.oneof(fc.constantFrom('marketing', '*', 'a*', '*b', 'a*b*c', '**', 'x', '1', ...HOSTILE_KEYS), fc.string({ maxLength: 6 }), fc.integer({ min: -1, max: 9 }));

const rateLimitArb = mapping(
  {
    unit: near(fc.constantFrom(...UNITS)),
    requests_per_unit: near(fc.oneof(fc.integer({ min: 0, max: 100 }), fc.constantFrom(0xffff_ffff, 2 ** 32, 2 ** 53))),
    unlimited: near(fc.boolean()),
    name: near(fc.constantFrom('a', 'b', '', '__proto__')),
    replaces: near(fc.array(mapping({ name: near(fc.constantFrom('a', 'b', '')) }), { maxLength: 2 })),
    algorithm: near(fc.constantFrom('fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency')),
    burst: near(fc.integer({ min: 0, max: 50 })),
    purpose: near(fc.constantFrom('abuse', 'shedding')),
    onError: near(fc.constantFrom('open', 'degraded', 'closed')),
    acknowledgeFailOpen: near(fc.constant('checked')),
    failClosedAfter: near(durationText),
    reason: near(fc.string({ maxLength: 8 })),
    store: near(fc.constantFrom('default', 'local')),
  },
  { required: ['unit', 'requests_per_unit'], rare: ['unlimited', 'replaces', 'burst', 'onError', 'acknowledgeFailOpen', 'failClosedAfter', 'name'] },
);

const descriptorArb = fc.letrec<{ descriptor: Record<string, unknown> }>((tie) => ({
  descriptor: mapping(
    {
      key: near(descriptorKey),
      value: near(descriptorValue),
      rate_limit: near(rateLimitArb),
      descriptors: near(fc.array(tie('descriptor'), { maxLength: 3, depthIdentifier: 'descriptors' })),
      shadow_mode: near(fc.boolean()),
      detailed_metric: near(fc.boolean()),
      value_to_metric: near(fc.boolean()),
      share_threshold: near(fc.boolean()),
      metadata: near(fc.constant(own([['__proto__', { a: 1 }]]))),
      quota_mode: near(fc.boolean()),
    },
    { required: ['key'], rare: ['shadow_mode', 'detailed_metric', 'value_to_metric', 'share_threshold', 'metadata', 'quota_mode'] },
  ),
})).descriptor;

/** A reference-format document: a domain and its descriptor tree. */
const rlsDoc = mapping({ domain: near(fc.constantFrom('messaging', 'edge', '', '__proto__', 'constructor')), descriptors: near(fc.array(descriptorArb, { maxLength: 4 })) }, { required: ['domain', 'descriptors'] });

/** A reference-format file as YAML, now and then with aliases. */
export const rlsText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(rlsDoc, fc.boolean()).map(([doc, flow]) => stringify(doc, flow ? { collectionStyle: 'flow' } : {})) },
  { weight: 1, arbitrary: yamlWithAliases(rlsDoc) },
);

const store = memoryStore();
const localStore = memoryStore();

export const rlsConfigTarget: FuzzTarget = {
  name: 'rls-config',
  arbitrary: fc.oneof({ weight: 6, arbitrary: rlsText }, { weight: 1, arbitrary: anyValue.map((v) => stringify(v)) }),
  seeds: () => [
    ...docRlsConfigs(),
    'domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: second, requests_per_unit: 10, algorithm: gcra, burst: 20, purpose: abuse, onError: closed, failClosedAfter: 5s }\n',
    'domain: api\ndescriptors:\n  - key: path\n    value: "/v1/*"\n    share_threshold: true\n    rate_limit: { unit: minute, requests_per_unit: 60, name: v1 }\n  - key: path\n    value: "/v1/login"\n    rate_limit: { unit: minute, requests_per_unit: 5, replaces: [{ name: v1 }], shadow: false }\n    shadow_mode: true\n',
    'domain: quota\ndescriptors:\n  - key: tenant\n    descriptors:\n      - key: plan\n        value: free\n        rate_limit: { unlimited: true }\n      - key: plan\n        rate_limit: { unit: day, requests_per_unit: 0 }\n',
  ],
  dictionary: [...HOSTILE_KEYS, ...EDGE_NUMBERS, ': ', '- ', '\n  ', '\n    ', '{', '}', '[', ']', ',', '&a ', '*a', '<<: ', '!!str ', '? ', '*', 'domain', 'descriptors', 'key', 'value', 'rate_limit', 'unit', 'requests_per_unit', 'replaces', 'share_threshold'],
  run: (input) => {
    const config = parseRlsConfig([{ file: 'fuzz.yaml', text: input }]);
    // Every accepted rule must build: the server builds the same engine at startup and on reload.
    const engine = new RlsEngine(config, { defaultStore: store, localStore });
    void engine.close();
    return config;
  },
  allowed: (error) => error instanceof ConfigFileError && error.file === 'fuzz.yaml',
  // A YAML document of up to 16 KiB: parse, validate, compile (and build the engine or the audit) on a shared machine.
  maxMs: 250,
};
