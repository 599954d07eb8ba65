/**
 * gRPC descriptors as `/json` and the gRPC handler read them: `requestFrom`
 * (proto3 JSON or the object grpc-js decodes) and the engine's matching and
 * decision on a config with exact, wildcard, shared, nested, unlimited,
 * blocked and replacing rules.
 */
import fc from 'fast-check';
import { EDGE_NUMBERS, HOSTILE_KEYS } from '../mutate.js';
import type { FuzzTarget } from '../harness.js';
import { memoryStore, parseRlsConfig, requestFrom, RlsEngine, RlsServiceError } from '../subjects.js';
import { own } from './shapes.js';

/** The config every input is decided against. */
export const DESCRIPTOR_CONFIG = `domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: second, requests_per_unit: 5, algorithm: gcra, burst: 5, purpose: abuse }
  - key: path
    value: "/v1/*"
    share_threshold: true
    rate_limit: { unit: minute, requests_per_unit: 60, name: v1 }
  - key: path
    value: "/v1/login"
    rate_limit: { unit: minute, requests_per_unit: 3, replaces: [{ name: v1 }] }
  - key: path
    value: "*a*b*"
    rate_limit: { unit: hour, requests_per_unit: 2, store: local }
  - key: tenant
    descriptors:
      - key: plan
        value: free
        rate_limit: { unit: day, requests_per_unit: 10, algorithm: sliding-log }
      - key: plan
        value: gold
        rate_limit: { unlimited: true }
      - key: plan
        rate_limit: { unit: day, requests_per_unit: 0 }
  - key: __proto__
    value: constructor
    shadow_mode: true
    rate_limit: { unit: year, requests_per_unit: 1 }
`;

const text = fc.oneof(fc.constantFrom('remote_address', 'path', 'tenant', 'plan', 'free', 'gold', '/v1/login', '/v1/x', 'xaybz', '', '*', ...HOSTILE_KEYS), fc.string({ maxLength: 8 }));
const odd = fc.oneof(fc.constant(null), fc.integer({ min: -2, max: 3 }), fc.constantFrom(...EDGE_NUMBERS, 1.5, -1, 2 ** 53, 1e300, true), fc.constant([]), fc.constant({}));
const near = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof({ weight: 7, arbitrary: valid }, { weight: 1, arbitrary: odd });
const count = fc.oneof(fc.integer({ min: 0, max: 10 }), fc.constantFrom(0xffff_ffff, 2 ** 53, '5', '18446744073709551615', '-1', '1.5'));
const snake = fc.boolean();

const entry = fc.tuple(near(text), near(text), fc.array(fc.tuple(fc.constantFrom(...HOSTILE_KEYS), odd), { maxLength: 1 })).map(([k, v, extra]) => own([['key', k], ['value', v], ...extra]));
const limit = fc.tuple(snake, near(count), near(fc.constantFrom('SECOND', 'MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR', 'UNKNOWN', 'second', 0, 1, 4, 7, 8, 'length'))).map(([s, rpu, unit]) => own([[s ? 'requests_per_unit' : 'requestsPerUnit', rpu], ['unit', unit]]));
const descriptor = fc
  .tuple(snake, near(fc.array(entry, { maxLength: 3 })), fc.option(near(limit)), fc.option(near(fc.oneof(count, count.map((v) => ({ value: v }))))))
  .map(([s, entries, l, hits]) => own([['entries', entries], ...(l === null ? [] : [['limit', l] as const]), ...(hits === null ? [] : [[s ? 'hits_addend' : 'hitsAddend', hits] as const])]));

/** A `RateLimitRequest` as proto3 JSON text. */
export const requestJson: fc.Arbitrary<string> = fc
  .tuple(snake, near(fc.constantFrom('edge', '', 'other', '__proto__')), near(fc.array(descriptor, { maxLength: 4 })), fc.option(near(count)))
  .map(([s, domain, descriptors, hits]) => JSON.stringify(own([['domain', domain], ['descriptors', descriptors], ...(hits === null ? [] : [[s ? 'hits_addend' : 'hitsAddend', hits] as const])])));

/** `requestFrom`'s documented refusals: a TypeError naming the field of a shape the proto cannot have. */
function isShapeError(error: unknown): boolean {
  return error instanceof TypeError && /^(the request must be an object|descriptors(\[\d+\](\.entries(\[\d+\])?|\.limit\.requests_per_unit|\.hits_addend)?)? must be|hits_addend must be)/.test(error.message);
}

let engine: RlsEngine | undefined;
function theEngine(): RlsEngine {
  engine ??= new RlsEngine(parseRlsConfig([{ file: 'edge.yaml', text: DESCRIPTOR_CONFIG }]), { defaultStore: memoryStore(), localStore: memoryStore(), responseHeaders: true, maxOverrides: 16 });
  return engine;
}

export const descriptorsTarget: FuzzTarget = {
  name: 'descriptors',
  arbitrary: requestJson,
  seeds: () => [
    '{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.0.1"}]}]}',
    '{"domain":"edge","descriptors":[{"entries":[{"key":"path","value":"/v1/login"}]},{"entries":[{"key":"path","value":"/v1/a"}]}],"hitsAddend":2}',
    '{"domain":"edge","descriptors":[{"entries":[{"key":"tenant","value":"t"},{"key":"plan","value":"free"}],"limit":{"requestsPerUnit":"3","unit":"MINUTE"},"hits_addend":{"value":1}}]}',
    '{"domain":"edge","descriptors":[{"entries":[{"key":"path","value":"xaybz"}]}]}',
  ],
  dictionary: [...HOSTILE_KEYS, ...EDGE_NUMBERS, '"', '{', '}', '[', ']', ',', ':', 'null', '"entries":', '"key":', '"value":', '"limit":', '"hits_addend":', '"unit":"DAY"', '"requests_per_unit":'],
  run: (input) => {
    let raw: unknown;
    try {
      raw = JSON.parse(input);
    } catch {
      return 'not JSON';
    }
    let request;
    try {
      request = requestFrom(raw);
    } catch (error) {
      if (isShapeError(error)) return 'refused';
      throw error;
    }
    return theEngine().decide(request);
  },
  allowed: (error) => error instanceof RlsServiceError && error.grpcCode === 'UNKNOWN',
};
