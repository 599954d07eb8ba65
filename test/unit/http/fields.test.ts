import fc from 'fast-check';
import { serializeList, type BareItem, type Item } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { policyField, rateLimitField, type AdvertisedLimit } from '../../../packages/ratecontract/src/http/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

// The draft-10 fields are assembled from cached pieces (src/http/write-fields.ts).
// The reference is what they must equal byte for byte: `serializeList` over
// the same items, parameters in the same order.

function params(entries: ReadonlyArray<readonly [string, number | string | Uint8Array | undefined]>): Map<string, BareItem> {
  const m = new Map<string, BareItem>();
  for (const [k, v] of entries) if (v !== undefined) m.set(k, v);
  return m;
}

const referencePolicy = (limits: readonly AdvertisedLimit[]): string =>
  serializeList(limits.map((l): Item => [l.name, params([['q', l.q], ['qu', l.qu], ['w', l.w], ['pk', l.pk]])]));
const referenceRateLimit = (limits: readonly AdvertisedLimit[]): string =>
  serializeList(limits.map((l): Item => [l.name, params([['r', l.r], ['t', l.t], ['pk', l.pk]])]));

function outcome(f: () => string): { text: string } | { threw: true } {
  try {
    return { text: f() };
  } catch {
    return { threw: true };
  }
}

// A few shared partition keys (the same object again and again, as the partition key cache returns them) and fresh ones.
const sharedKeys = [new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]), new Uint8Array([255, 254, 0, 64, 65, 66, 67, 68, 69, 70, 71, 72]), new Uint8Array(0)];
const pk = fc.oneof(fc.constant(undefined), fc.constantFrom(...sharedKeys), fc.uint8Array({ maxLength: 16 }));
// Mostly the integers the limiter produces; sometimes ones the serialiser must refuse (out of range) or write as decimals.
const integer = fc.oneof(
  { weight: 8, arbitrary: fc.nat({ max: 1_000_000 }) },
  { weight: 1, arbitrary: fc.constantFrom(999_999_999_999_999, 1_000_000_000_000_000, Number.MAX_SAFE_INTEGER, -1, -0) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, min: -1e6, max: 1e6 }) },
);
// Real names are [a-z0-9_-]+; a few others exercise escaping and refusal (non-ASCII) the same way.
const name = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('per-ip', 'per-user', 'otp_1', 'x') }, { weight: 1, arbitrary: fc.string({ maxLength: 6 }) });
const limit: fc.Arbitrary<AdvertisedLimit> = fc.record({
  name,
  q: integer,
  w: fc.option(integer, { nil: undefined }),
  qu: fc.option(fc.constantFrom('concurrent-requests', 'ünits'), { nil: undefined }),
  pk,
  r: integer,
  t: fc.option(integer, { nil: undefined }),
  violated: fc.boolean(),
});

describe('draft-10 fields', () => {
  it('RateLimit-Policy and RateLimit are byte-identical to serializeList, and refuse what it refuses', () => {
    fc.assert(
      fc.property(fc.array(limit, { maxLength: 4 }), (limits) => {
        // twice: the second time from the caches
        for (let i = 0; i < 2; i++) {
          expect(outcome(() => policyField(limits))).toEqual(outcome(() => referencePolicy(limits)));
          expect(outcome(() => rateLimitField(limits))).toEqual(outcome(() => referenceRateLimit(limits)));
        }
      }),
      fcBudget({ runs: 2000, ms: 3000 }),
    );
  });

  it('a cached policy item follows a change of q, w or qu under the same name and key', () => {
    const base: AdvertisedLimit = { name: 'per-ip', q: 10, w: 60, qu: undefined, pk: sharedKeys[0], r: 9, t: 60, violated: false };
    for (const l of [base, { ...base, q: 11 }, { ...base, w: 1 }, { ...base, w: undefined, qu: 'concurrent-requests' }, base]) {
      expect(policyField([l])).toBe(referencePolicy([l]));
    }
  });
});
