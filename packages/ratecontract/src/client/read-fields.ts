import { arrayBufferToBase64, parseDictionary, parseList, Token, type Item } from 'structured-headers';

/**
 * Reading the `RateLimit` and `RateLimit-Policy` fields a server sent (the
 * client's side of src/http/write-fields.ts, parsed with the same
 * `structured-headers` package).
 *
 * Shapes accepted:
 * - draft-10 / -11: `RateLimit: "name";r=50;t=30;pk=:...:` and
 *   `RateLimit-Policy: "name";q=100;w=60;qu="requests";pk=:...:`
 *   (an SF List; the item is a String, or a Token as in older examples);
 * - the renames in flight (ratelimit-headers PR #166): `a` for `r` and `w`
 *   for `t` on `RateLimit`;
 * - draft-7: `RateLimit: limit=100, remaining=50, reset=30` (an SF
 *   Dictionary) with `RateLimit-Policy: 100;w=60` (Integer items). Such a
 *   limit has the empty name `''` and pairs with the unnamed policy.
 *
 * A field that does not parse, or has one item that breaks the shape (no
 * remaining, a negative or fractional number, a partition key that is not a
 * Byte Sequence), is malformed and ignored as a whole: the draft says
 * malformed fields MUST be ignored. Unknown parameters are comments.
 */

/** One item of `RateLimit`: what is left of one policy. */
export interface ServiceLimit {
  /** Policy name (`''` for a draft-7 field). */
  readonly name: string;
  /** Partition key as base64, or `undefined`. */
  readonly pk: string | undefined;
  /** Remaining quota units. */
  readonly r: number;
  /** Seconds until more quota is made available, or `undefined`. */
  readonly t: number | undefined;
}

/** One item of `RateLimit-Policy`. */
export interface QuotaPolicy {
  readonly name: string;
  readonly pk: string | undefined;
  /** Quota units per window. */
  readonly q: number;
  /** Window in seconds, or `undefined`. */
  readonly w: number | undefined;
  /** Quota unit; `undefined` is the default, requests. */
  readonly qu: string | undefined;
}

class Malformed extends Error {}

function count(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new Malformed();
  return v;
}

function optionalCount(v: unknown): number | undefined {
  return v === undefined ? undefined : count(v);
}

function name(item: Item): string {
  const v: unknown = item[0];
  if (typeof v === 'string') return v;
  if (v instanceof Token) return v.toString();
  throw new Malformed();
}

function partitionKey(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (!(v instanceof ArrayBuffer)) throw new Malformed();
  return arrayBufferToBase64(v);
}

function list(value: string): Item[] {
  const out: Item[] = [];
  for (const member of parseList(value)) {
    // An Inner List is not a limit.
    if (Array.isArray(member[0])) throw new Malformed();
    out.push(member as Item);
  }
  return out;
}

/** The items of a `RateLimit` field, or `undefined` if it is absent or malformed. */
export function parseRateLimit(value: string | null | undefined): ServiceLimit[] | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  try {
    return list(value).map((item): ServiceLimit => {
      const p: ReadonlyMap<string, unknown> = item[1];
      const r = p.has('r') ? p.get('r') : p.get('a');
      const t = p.has('t') ? p.get('t') : p.get('w');
      return { name: name(item), pk: partitionKey(p.get('pk')), r: count(r), t: optionalCount(t) };
    });
  } catch {
    // Not an SF List (or not a valid one): perhaps the draft-7 Dictionary.
  }
  try {
    const d = parseDictionary(value);
    const member = (key: string): unknown => {
      const m = d.get(key);
      if (m === undefined) return undefined;
      const v: unknown = m[0];
      return Array.isArray(v) ? undefined : v;
    };
    const remaining = member('remaining');
    if (remaining === undefined) return undefined;
    return [{ name: '', pk: undefined, r: count(remaining), t: optionalCount(member('reset')) }];
  } catch {
    return undefined;
  }
}

/** The items of a `RateLimit-Policy` field, or `undefined` if it is absent or malformed. */
export function parsePolicy(value: string | null | undefined): QuotaPolicy[] | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  try {
    return list(value).map((item): QuotaPolicy => {
      const p: ReadonlyMap<string, unknown> = item[1];
      const w = optionalCount(p.get('w'));
      if (w === 0) throw new Malformed();
      const qu = p.get('qu');
      if (qu !== undefined && typeof qu !== 'string') throw new Malformed();
      // Draft 6/7: the item is the quota itself, with no name.
      const bare: unknown = item[0];
      if (typeof bare === 'number') return { name: '', pk: undefined, q: count(bare), w, qu: undefined };
      return { name: name(item), pk: partitionKey(p.get('pk')), q: count(p.get('q')), w, qu };
    });
  } catch {
    return undefined;
  }
}

/** Whether a policy counts requests (the default unit), as opposed to bytes. */
export function countsRequests(policy: QuotaPolicy | undefined): boolean {
  return policy === undefined || policy.qu === undefined || policy.qu === 'requests' || policy.qu === 'request';
}
