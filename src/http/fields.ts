import { serializeDictionary, serializeItem, serializeList, type BareItem, type Item } from 'structured-headers';

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

/** `RateLimit-Policy` (draft-10): a List of String policy names with `q`, `qu`, `w`, `pk`. */
export function policyField(limits: readonly AdvertisedLimit[]): string {
  const list: Item[] = limits.map((l) => [l.name, params([['q', l.q], ['qu', l.qu], ['w', l.w], ['pk', l.pk]])]);
  return serializeList(list);
}

/** `RateLimit` (draft-10): a List of String policy names with `r`, `t`, `pk`. */
export function rateLimitField(limits: readonly AdvertisedLimit[]): string {
  const list: Item[] = limits.map((l) => [l.name, params([['r', l.r], ['t', l.t], ['pk', l.pk]])]);
  return serializeList(list);
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
