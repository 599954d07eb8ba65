/**
 * Random rate limit service configs and descriptor traffic for the rls
 * properties: small trees (keys a, b, c; plain, exact and wildcard values),
 * rules with every extension, and requests whose entries hit, miss and
 * override those rules.
 */
import fc from 'fast-check';
import { stringify } from 'yaml';

/** The algorithms an rls rule may name. */
const ALGORITHMS = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra'] as const;
const BUCKETS: ReadonlySet<string> = new Set(['token-bucket', 'leaky-bucket', 'gcra']);

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** One `rate_limit` map, as a file writes it. */
export type RateLimitDoc = { [k: string]: Json };

/** A valid `rate_limit`: unlimited, blocked (0) or limited, with or without each extension. */
export function rateLimitArb(): fc.Arbitrary<RateLimitDoc> {
  const limited = fc
    .record(
      {
        unit: fc.constantFrom('second', 'minute', 'hour', 'SECOND', 'Minute'),
        requests_per_unit: fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 6, arbitrary: fc.integer({ min: 1, max: 5 }) }),
        algorithm: fc.constantFrom(...ALGORITHMS),
        burst: fc.integer({ min: 1, max: 6 }),
        purpose: fc.constantFrom('abuse', 'shedding'),
        onError: fc.constantFrom('open', 'degraded', 'closed'),
        acknowledgeFailOpen: fc.constant('the upstream has its own lockout'),
        failClosedAfter: fc.constantFrom('1s', '500ms', 2000),
        name: fc.constantFrom('n1', 'n2', 'n3'),
        replaces: fc.constantFrom([{ name: 'n1' }], [{ name: 'n2' }], [{ name: 'ghost' }]),
        store: fc.constantFrom('default', 'local'),
        reason: fc.constantFrom('why', 42),
      },
      { requiredKeys: ['unit'] },
    )
    .map((r) => {
      const out = { ...r } as unknown as RateLimitDoc;
      if (r.burst !== undefined && !BUCKETS.has(r.algorithm ?? 'fixed-window')) delete out.burst;
      const onError = r.onError ?? (r.purpose === 'abuse' ? 'closed' : 'degraded');
      if (onError === 'open' && r.purpose === 'abuse' && r.acknowledgeFailOpen === undefined) out.acknowledgeFailOpen = 'acknowledged';
      if (onError !== 'closed') delete out.failClosedAfter;
      if (r.name !== undefined && r.replaces?.some((x) => x.name === r.name) === true) delete out.replaces;
      return out;
    });
  return fc.oneof({ weight: 1, arbitrary: fc.constant<RateLimitDoc>({ unlimited: true }) }, { weight: 9, arbitrary: limited });
}

const VALUES = [undefined, 'x', 'y', 'x*', '*y', '*'] as const;

function composite(d: { key: string; value?: string | undefined }): string {
  return d.value === undefined || d.value === '' ? d.key : `${d.key}_${d.value}`;
}

function descriptorsArb(depth: number): fc.Arbitrary<Json[]> {
  const node = fc
    .record(
      {
        key: fc.constantFrom('a', 'b', 'c'),
        value: fc.constantFrom(...VALUES),
        rate_limit: rateLimitArb(),
        shadow_mode: fc.boolean(),
        share_threshold: fc.boolean(),
        descriptors: depth > 1 ? descriptorsArb(depth - 1) : fc.constant([] as Json[]),
      },
      { requiredKeys: ['key'] },
    )
    .map((d) => {
      const out: { [k: string]: Json } = {};
      for (const [k, v] of Object.entries(d)) if (v !== undefined) out[k] = v;
      if (d.share_threshold === true && !(d.value ?? '').includes('*')) delete out.share_threshold;
      if (Array.isArray(out.descriptors) && out.descriptors.length === 0) delete out.descriptors;
      return out;
    });
  return fc.uniqueArray(node, { maxLength: 3, selector: (d) => composite(d as { key: string; value?: string }) });
}

/** A valid config file of domain `d`, as a document. */
export const rlsDocArb: fc.Arbitrary<{ domain: string; descriptors: Json[] }> = descriptorsArb(3).map((descriptors) => ({ domain: 'd', descriptors }));

/**
 * One problem put into a valid counting rule: what the old loader and the
 * translation answer (the codes, and the key the error names, as the file
 * writes it). Where the two codes differ, the change is deliberate
 * (docs/errors.md): an invalid purpose has its own code, and an unknown
 * algorithm is the library's RC_UNKNOWN_ALGORITHM.
 */
export interface Problem {
  readonly label: string;
  readonly apply: (rl: RateLimitDoc) => void;
  /** The old loader's code (checked against it until it was removed, commit 0ffc96e). */
  readonly old: string;
  readonly now: string;
  /** The last segment of the path the error names. */
  readonly key: string;
}

export const PROBLEMS: readonly Problem[] = [
  { label: 'burst on a window', apply: (rl) => Object.assign(rl, { algorithm: 'fixed-window', burst: 2 }), old: 'RC_INVALID_BURST', now: 'RC_INVALID_BURST', key: 'burst' },
  {
    label: 'an abuse rule open without acknowledgement',
    apply: (rl) => {
      Object.assign(rl, { purpose: 'abuse', onError: 'open' });
      delete rl.acknowledgeFailOpen;
      delete rl.failClosedAfter;
    },
    old: 'RC_FAIL_OPEN_UNACKNOWLEDGED',
    now: 'RC_FAIL_OPEN_UNACKNOWLEDGED',
    key: 'acknowledgeFailOpen',
  },
  { label: 'failClosedAfter on a degraded rule', apply: (rl) => Object.assign(rl, { onError: 'degraded', failClosedAfter: '1s' }), old: 'RC_INVALID_OPTION', now: 'RC_INVALID_OPTION', key: 'failClosedAfter' },
  { label: 'an invalid purpose', apply: (rl) => Object.assign(rl, { purpose: 'security' }), old: 'RC_INVALID_OPTION', now: 'RC_INVALID_PURPOSE', key: 'purpose' },
  { label: 'an invalid onError', apply: (rl) => Object.assign(rl, { onError: 'never' }), old: 'RC_INVALID_OPTION', now: 'RC_INVALID_OPTION', key: 'onError' },
  { label: 'an invalid unit', apply: (rl) => Object.assign(rl, { unit: 'fortnight' }), old: 'RC_INVALID_OPTION', now: 'RC_INVALID_OPTION', key: 'unit' },
  { label: 'a negative requests_per_unit', apply: (rl) => Object.assign(rl, { requests_per_unit: -1 }), old: 'RC_INVALID_LIMIT', now: 'RC_INVALID_LIMIT', key: 'requests_per_unit' },
  { label: 'concurrency', apply: (rl) => Object.assign(rl, { algorithm: 'concurrency' }), old: 'RC_INVALID_OPTION', now: 'RC_INVALID_OPTION', key: 'algorithm' },
  { label: 'an unknown algorithm', apply: (rl) => Object.assign(rl, { algorithm: 'gcrq' }), old: 'RC_INVALID_OPTION', now: 'RC_UNKNOWN_ALGORITHM', key: 'algorithm' },
  { label: 'a misspelt clause', apply: (rl) => Object.assign(rl, { algoritm: 'gcra' }), old: 'RC_INVALID_OPTION', now: 'RC_INVALID_OPTION', key: 'algoritm' },
  {
    // The old loader accepted it and its engine refused it, naming no file ("limits[0].limit").
    label: 'a sliding log above its memory budget',
    apply: (rl) => {
      Object.assign(rl, { algorithm: 'sliding-log', unit: 'day', requests_per_unit: 4_294_967_295 });
      delete rl.burst;
    },
    old: 'RC_INVALID_LIMIT',
    now: 'RC_INVALID_LIMIT',
    key: 'requests_per_unit',
  },
];

function countingRules(descriptors: Json[] | undefined, out: RateLimitDoc[] = []): RateLimitDoc[] {
  for (const d of descriptors ?? []) {
    const node = d as { rate_limit?: RateLimitDoc; descriptors?: Json[] };
    if (node.rate_limit !== undefined && node.rate_limit.unlimited !== true) out.push(node.rate_limit);
    countingRules(node.descriptors, out);
  }
  return out;
}

/** A valid file with exactly one problem in one of its counting rules: the YAML text and the problem. */
export const oneProblemArb: fc.Arbitrary<{ text: string; problem: Problem }> = fc
  .tuple(rlsDocArb, fc.nat(), fc.constantFrom(...PROBLEMS))
  .filter(([doc]) => countingRules(doc.descriptors).length > 0)
  .map(([doc, pick, problem]) => {
    const copy = structuredClone(doc);
    const rules = countingRules(copy.descriptors);
    problem.apply(rules[pick % rules.length] as RateLimitDoc);
    return { text: stringify(copy), problem };
  });

/** One `RateLimitDescriptor` of a request, as the engine reads it. */
export interface DescriptorDraw {
  readonly entries: ReadonlyArray<{ readonly key: string; readonly value: string }>;
  readonly hitsAddend?: number;
  readonly limit?: { readonly requestsPerUnit: number; readonly unit: 'second' | 'minute' | undefined };
}

/** One request after the clock moved by `dt` ms. */
export interface TrafficStep {
  readonly dt: number;
  readonly domain: string;
  readonly hitsAddend: number;
  readonly descriptors: readonly DescriptorDraw[];
}

const entryArb = fc.record({ key: fc.constantFrom('a', 'b', 'c', 'z'), value: fc.constantFrom('x', 'y', 'xy', 'x1', '1y', '') });
const descriptorDrawArb: fc.Arbitrary<DescriptorDraw> = fc.record(
  {
    entries: fc.array(entryArb, { minLength: 1, maxLength: 3 }),
    hitsAddend: fc.integer({ min: 0, max: 3 }),
    limit: fc.record({ requestsPerUnit: fc.integer({ min: 0, max: 4 }), unit: fc.constantFrom<'second' | 'minute' | undefined>('second', 'minute', undefined) }),
  },
  { requiredKeys: ['entries'] },
);

/** Requests against domain `d` (and sometimes another), with time moving by up to a few seconds, sometimes a minute. */
export const trafficArb: fc.Arbitrary<TrafficStep[]> = fc.array(
  fc.record({
    dt: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 400 }) }, { weight: 1, arbitrary: fc.constantFrom(999, 1000, 60_000, 3_600_000) }),
    domain: fc.oneof({ weight: 9, arbitrary: fc.constant('d') }, { weight: 1, arbitrary: fc.constant('other') }),
    hitsAddend: fc.integer({ min: 0, max: 2 }),
    descriptors: fc.array(
      fc.oneof({ weight: 5, arbitrary: descriptorDrawArb.map((d): DescriptorDraw => ({ entries: d.entries, ...(d.hitsAddend !== undefined && { hitsAddend: d.hitsAddend }) })) }, { weight: 1, arbitrary: descriptorDrawArb }),
      { minLength: 1, maxLength: 3 },
    ),
  }),
  { minLength: 1, maxLength: 40 },
);
