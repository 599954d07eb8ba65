import { randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '../core/clock.js';
import { parseDuration, type Duration } from '../core/duration.js';
import { ConfigError } from '../core/errors.js';

/**
 * Who is told the policy table (`RateLimit-Policy`, `RateLimit`, the names of
 * violated policies, partition keys):
 * - `'authenticated'` (default): callers for whom `identify(req)` returned a principal;
 * - `'always'`: everyone;
 * - `'never'`: nobody.
 *
 * Whatever the setting, every rejection carries its status and `Retry-After`.
 */
export type Advertise = 'authenticated' | 'always' | 'never';

/**
 * The shape of the rate-limit fields:
 * - `'draft-10'` (default): `RateLimit-Policy: "name";q=100;w=60` and `RateLimit: "name";r=42;t=17`
 *   (draft-ietf-httpapi-ratelimit-headers-10, one item per advertised limit);
 * - `'draft-7'`: `RateLimit: limit=100, remaining=42, reset=17` and `RateLimit-Policy: 100;w=60` (one limit);
 * - `'draft-6'`: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` and `RateLimit-Policy` (one limit);
 * - `false`: none (status, `Retry-After` and the body only).
 */
export type HeaderShape = 'draft-10' | 'draft-7' | 'draft-6' | false;

/** Options of the response mapping. Every adapter accepts them. */
export interface ResponseOptions {
  /** Default `'authenticated'`. */
  readonly advertise?: Advertise | undefined;
  /** Which rate-limit fields to emit: `'draft-10'` (default), `'draft-7'`, `'draft-6'` or `false`. */
  readonly fields?: HeaderShape | undefined;
  /** Also send `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (Unix seconds), when advertising. Default false. */
  readonly legacyHeaders?: boolean | undefined;
  /**
   * Advertise limits whose rejection status is 503 (global limits, load
   * shedders). Default false: their numbers describe the server's capacity,
   * which the draft (section 8.2) says not to disclose to untrusted parties.
   */
  readonly advertiseCapacity?: boolean | undefined;
  /**
   * Caps what long windows advertise: for a limit whose window W is longer
   * than this, the advertised remaining `r` is at most `ceil(q * windowCap / W)`,
   * so an unspent daily quota is not read as permission to spend it in a
   * second (draft section 8.5). `q`, `w` and `t` stay exact. Default: no cap.
   */
  readonly windowCap?: Duration | undefined;
  /** Send `pk` (a keyed hash of the limit's key, never the key) with each advertised policy. Default true. */
  readonly partitionKeys?: boolean | undefined;
  /**
   * HMAC secret for `pk`. Default: random per process, so `pk` is stable per
   * process only; set the same secret on every replica for fleet-wide stable keys.
   */
  readonly partitionKeySecret?: string | Uint8Array | undefined;
  /** Clock for `X-RateLimit-Reset` (Unix seconds). Default the system clock. */
  readonly clock?: Clock | undefined;
}

/** `ResponseOptions` with defaults applied. */
export interface ResolvedResponseOptions {
  readonly advertise: Advertise;
  readonly fields: HeaderShape;
  readonly legacyHeaders: boolean;
  readonly advertiseCapacity: boolean;
  readonly windowCapMs: number | undefined;
  readonly partitionKeys: boolean;
  readonly partitionKeySecret: Uint8Array;
  readonly clock: Clock;
}

function bool(v: unknown, fallback: boolean, option: string): boolean {
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw new ConfigError('RC_INVALID_OPTION', option, `must be a boolean, got ${typeof v}`);
  return v;
}

let processSecret: Uint8Array | undefined;

/** Applies defaults and validates; throws `ConfigError` naming the option. */
export function resolveResponseOptions(o: ResponseOptions): ResolvedResponseOptions {
  const advertise = o.advertise ?? 'authenticated';
  if (advertise !== 'authenticated' && advertise !== 'always' && advertise !== 'never') {
    throw new ConfigError('RC_INVALID_OPTION', 'advertise', `must be 'authenticated', 'always' or 'never', got ${JSON.stringify(advertise)}`);
  }
  const fields = o.fields ?? 'draft-10';
  if (fields !== 'draft-10' && fields !== 'draft-7' && fields !== 'draft-6' && fields !== false) {
    throw new ConfigError('RC_INVALID_OPTION', 'fields', `must be 'draft-10', 'draft-7', 'draft-6' or false, got ${JSON.stringify(fields)}`);
  }
  const secret = o.partitionKeySecret;
  let partitionKeySecret: Uint8Array;
  if (secret === undefined) {
    processSecret ??= new Uint8Array(randomBytes(32));
    partitionKeySecret = processSecret;
  } else if (typeof secret === 'string' && secret.length > 0) {
    partitionKeySecret = new TextEncoder().encode(secret);
  } else if (secret instanceof Uint8Array && secret.length > 0) {
    partitionKeySecret = secret;
  } else {
    throw new ConfigError('RC_INVALID_OPTION', 'partitionKeySecret', 'must be a non-empty string or Uint8Array');
  }
  const clock = o.clock ?? systemClock;
  if (typeof clock.now !== 'function') throw new ConfigError('RC_INVALID_OPTION', 'clock', 'must have a now() method');
  return {
    advertise,
    fields,
    legacyHeaders: bool(o.legacyHeaders, false, 'legacyHeaders'),
    advertiseCapacity: bool(o.advertiseCapacity, false, 'advertiseCapacity'),
    windowCapMs: o.windowCap === undefined ? undefined : parseDuration(o.windowCap, 'windowCap'),
    partitionKeys: bool(o.partitionKeys, true, 'partitionKeys'),
    partitionKeySecret,
    clock,
  };
}
