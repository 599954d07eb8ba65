import { serializeBareItem, serializeDictionary, serializeItem, serializeList, type BareItem, type Item } from 'structured-headers';

type ParamValue = number | string | Uint8Array;

/** One limit as it is advertised to a client. All numbers are non-negative integers. */
export interface AdvertisedLimit {
  /** Policy name: the limit's name (`[a-z0-9_-]+`). */
  readonly name: string;
  /** Quota `q`: the limit's N. */
  readonly q: number;
  /** Window `w` in whole seconds (>= 1); `undefined` for concurrency limits, which have no window. */
  readonly w: number | undefined;
  /** Quota unit `qu`; `undefined` means the draft's default (requests). */
  readonly qu: string | undefined;
  /** Partition key `pk`: a keyed hash of the limit's key, never the key itself. */
  readonly pk: Uint8Array | undefined;
  /** Remaining `r`, after any `windowCap`. */
  readonly r: number;
  /** Reset `t` in whole seconds; `undefined` when there is nothing to promise. */
  readonly t: number | undefined;
  /** Whether this limit rejected the request. */
  readonly violated: boolean;
}

function params(entries: ReadonlyArray<readonly [string, ParamValue | undefined]>): Map<string, BareItem> {
  const m = new Map<string, BareItem>();
  for (const [k, v] of entries) if (v !== undefined) m.set(k, v);
  return m;
}

// The draft-10 fields go out on every advertised response, so they are
// assembled from cached pieces: each bare item is still serialised by
// `structured-headers` (names and partition keys once, then cached; integers
// are their decimal digits, as `serializeInteger` writes them, within its
// range and through it outside), joined with the List and Parameters syntax
// of RFC 9651 (`, ` between items, `;key=value` per parameter, in the order
// given). test/http/fields.test.ts checks the result byte for byte against
// `serializeList` on random input.

const MAX_SF_INTEGER = 999_999_999_999_999;
/** Bounds of the caches keyed by strings (limit names come from configuration, so this is never reached in practice). */
const CACHE_SIZE = 1000;

function integer(n: number): string {
  return Number.isInteger(n) && n >= -MAX_SF_INTEGER && n <= MAX_SF_INTEGER ? String(n) : serializeBareItem(n);
}

const stringItems = new Map<string, string>();
function stringItem(s: string): string {
  let out = stringItems.get(s);
  if (out === undefined) {
    out = serializeBareItem(s);
    if (stringItems.size >= CACHE_SIZE) stringItems.clear();
    stringItems.set(s, out);
  }
  return out;
}

/** `;pk=:...:` per partition key (partition keys are themselves cached, so the same bytes come back as the same object). */
const pkParams = new WeakMap<Uint8Array, string>();
function pkParam(pk: Uint8Array | undefined): string {
  if (pk === undefined) return '';
  let out = pkParams.get(pk);
  if (out === undefined) {
    out = ';pk=' + serializeBareItem(pk);
    pkParams.set(pk, out);
  }
  return out;
}

interface PolicyItem {
  readonly q: number;
  readonly qu: string | undefined;
  readonly w: number | undefined;
  readonly text: string;
}
/** Serialised `RateLimit-Policy` items per partition key (`NO_PK` for none), then per policy name. */
const policyItems = new WeakMap<object, Map<string, PolicyItem>>();
const NO_PK = {};

function policyItem(l: AdvertisedLimit): string {
  const owner = l.pk ?? NO_PK;
  let byName = policyItems.get(owner);
  if (byName === undefined) {
    byName = new Map();
    policyItems.set(owner, byName);
  }
  const hit = byName.get(l.name);
  if (hit !== undefined && hit.q === l.q && hit.qu === l.qu && hit.w === l.w) return hit.text;
  let text = stringItem(l.name) + ';q=' + integer(l.q);
  if (l.qu !== undefined) text += ';qu=' + stringItem(l.qu);
  if (l.w !== undefined) text += ';w=' + integer(l.w);
  text += pkParam(l.pk);
  if (byName.size >= CACHE_SIZE) byName.clear();
  byName.set(l.name, { q: l.q, qu: l.qu, w: l.w, text });
  return text;
}

/** `RateLimit-Policy` (draft-10): a List of String policy names with `q`, `qu`, `w`, `pk`. */
export function policyField(limits: readonly AdvertisedLimit[]): string {
  let out = '';
  for (let i = 0; i < limits.length; i++) out += (i === 0 ? '' : ', ') + policyItem(limits[i] as AdvertisedLimit);
  return out;
}

/** `RateLimit` (draft-10): a List of String policy names with `r`, `t`, `pk`. */
export function rateLimitField(limits: readonly AdvertisedLimit[]): string {
  let out = '';
  for (let i = 0; i < limits.length; i++) {
    const l = limits[i] as AdvertisedLimit;
    out += (i === 0 ? '' : ', ') + stringItem(l.name) + ';r=' + integer(l.r);
    if (l.t !== undefined) out += ';t=' + integer(l.t);
    out += pkParam(l.pk);
  }
  return out;
}

/** `RateLimit-Policy` of drafts 6 and 7: a List of Integer quotas with `w`. */
export function legacyPolicyField(limits: readonly AdvertisedLimit[]): string {
  return serializeList(limits.map((l): Item => [l.q, params([['w', l.w]])]));
}

/** Draft-7 `RateLimit`: a Dictionary `limit=, remaining=, reset=`. */
export function draft7RateLimitField(l: AdvertisedLimit): string {
  return serializeDictionary({ limit: l.q, remaining: l.r, reset: l.t ?? 0 });
}

/** Draft-6 fields, each an Integer Item. */
export function draft6Fields(l: AdvertisedLimit): Record<string, string> {
  return {
    'RateLimit-Limit': serializeItem(l.q),
    'RateLimit-Remaining': serializeItem(l.r),
    'RateLimit-Reset': serializeItem(l.t ?? 0),
  };
}
