import { createHash, createHmac } from 'node:crypto';
import { ConfigError } from './errors.js';
import type { Store } from './store.js';
import type { CompiledLimit, KeySpec, RequestContext } from './types.js';

/** Keys longer than this are replaced by their SHA-256 before they reach a store. */
export const MAX_RAW_KEY_LENGTH = 64;

/** The key every request shares under `key: 'global'`. */
export const GLOBAL_KEY = '*';

/**
 * Bounds a key: keys up to 64 UTF-16 units are kept as they are; longer ones
 * become `'#' + base64url(sha256(key))` (44 characters), so memory per key is
 * bounded whatever the client sends (10 KB headers, NUL, CRLF, unicode).
 */
export function boundKey(raw: string): string {
  if (raw.length <= MAX_RAW_KEY_LENGTH) return raw;
  return keyHash(raw);
}

/** `'#' + base64url(sha256(key))`: how a key is named where the raw key must not appear (long keys, the reset audit event). */
export function keyHash(raw: string): string {
  return '#' + createHash('sha256').update(raw, 'utf8').digest('base64url');
}

function first(v: string | readonly string[] | undefined): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'string') return v;
  return v[0];
}

function scalar(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  return undefined;
}

function bodyPath(path: readonly string[]): (ctx: RequestContext) => string | undefined {
  return (ctx) => {
    let v: unknown = ctx.body;
    for (const part of path) {
      if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, part)) return undefined;
      v = (v as Record<string, unknown>)[part];
    }
    return scalar(v);
  };
}

/**
 * Compiles a key spec into a function returning the raw key, or `undefined`
 * when the request has no value for it (the limit then does not apply).
 */
export function compileKey(spec: KeySpec, option: string): (ctx: RequestContext) => string | undefined {
  if (typeof spec === 'function') {
    return (ctx) => scalar(spec(ctx));
  }
  if (typeof spec !== 'string') {
    throw new ConfigError('RC_INVALID_KEY', option, `expected a key extractor name or a function, got ${typeof spec}`);
  }
  switch (spec) {
    case 'ip':
      return (ctx) => ctx.ip;
    case 'principal':
      return (ctx) => ctx.principal;
    case 'global':
      return () => GLOBAL_KEY;
    default:
      break;
  }
  const dot = spec.indexOf('.');
  const kind = dot > 0 ? spec.slice(0, dot) : spec;
  const rest = dot > 0 ? spec.slice(dot + 1) : '';
  if (rest.length === 0 || !/^[A-Za-z0-9_.-]+$/.test(rest)) {
    throw new ConfigError(
      'RC_INVALID_KEY',
      option,
      `unknown key extractor ${JSON.stringify(spec)}; expected 'ip', 'principal', 'global', 'header.<name>', 'query.<name>', 'body.<field>' or a function`,
    );
  }
  switch (kind) {
    case 'header': {
      const name = rest.toLowerCase();
      return (ctx) => first(ctx.headers?.[name]);
    }
    case 'query':
      return (ctx) => first(ctx.query?.[rest]);
    case 'body':
      return bodyPath(rest.split('.'));
    default:
      throw new ConfigError(
        'RC_INVALID_KEY',
        option,
        `unknown key extractor ${JSON.stringify(spec)}; expected 'ip', 'principal', 'global', 'header.<name>', 'query.<name>', 'body.<field>' or a function`,
      );
  }
}

/** Marks a slot key (`keySlots`), so it can never equal a bounded raw key of the same limit. */
const SLOT_MARK = '%';

/**
 * `keySlots`: the slot `raw` falls in, as a key: `'%' + n` with
 * n = (first 48 bits of HMAC-SHA-256(secret, raw)) mod `slots`, or of
 * SHA-256(raw) without a secret. The modulo bias is below 2^-16 for any
 * slot count up to 2^32. Without a secret anyone can compute which keys
 * share a victim's slot (a collision only ever makes a limit stricter, so
 * that buys an attacker a denial of service on one slot, never extra
 * admissions); a secret makes the mapping unpredictable.
 */
export function slotKey(raw: string, slots: number, secret: string | Uint8Array | undefined): string {
  const h = secret === undefined ? createHash('sha256').update(raw, 'utf8').digest() : createHmac('sha256', secret).update(raw, 'utf8').digest();
  return SLOT_MARK + String(h.readUIntBE(0, 6) % slots);
}

/**
 * Per limit: raw key -> the key its state lives under in `store` (bounded;
 * with `keySlots`, its slot, by the store's own `slotKey` when it has one).
 */
export function stateKeyOf(limit: CompiledLimit, store: Store): (raw: string) => string {
  const slots = limit.keySlots;
  if (slots === undefined) return boundKey;
  if (typeof store.slotKey === 'function') return (raw: string) => (store.slotKey as (key: string, slots: number) => string)(boundKey(raw), slots);
  return (raw: string) => slotKey(boundKey(raw), slots, undefined);
}
