import { createHmac } from 'node:crypto';
import type { CompiledLimit, Decision, LimitResult } from '../core/types.js';
import { draft6Fields, draft7RateLimitField, legacyPolicyField, policyField, rateLimitField, type AdvertisedLimit } from './write-fields.js';
import { PROBLEM_MEDIA_TYPE, PROBLEM_TYPES, problemBody, type ProblemDetails } from './problem.js';
import type { ResolvedResponseOptions } from './response-options.js';
import { retryAfterSeconds } from './write-retry-after.js';

/** What to answer: the status, the header fields (canonical names) and the body. */
export interface HttpResponse {
  /** 200 when the request may go on (add `headers` to the application's response); otherwise the status to send. */
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The problem+json body of a rejection; `undefined` when the request goes on. */
  readonly body: string | undefined;
}

/** What the mapping needs to know besides the decision. */
export interface MapContext {
  /** The limiter's limits (`limiter.limits`), in chain order. */
  readonly limits: readonly CompiledLimit[];
  /** Whether the caller is authenticated (`identify(req)` returned a principal). */
  readonly authenticated: boolean;
  /** The raw key of a limit for this request, for the partition key. Omit to send no `pk`. */
  readonly keyOf?: ((limit: CompiledLimit) => string | undefined) | undefined;
}

/** Status of a request whose cost exceeds what a limit can ever admit (`retryAfterMs === Infinity`). */
export const NEVER_FITS_STATUS = 413;
/** Length in bytes of a partition key. */
const PK_BYTES = 12;

/**
 * The partition key sent as `pk`: the first 12 bytes of
 * HMAC-SHA256(secret, keySpec NUL key). Clients can compare keys between
 * responses; nobody can recover the key (an address, an account id) from it.
 */
export function partitionKey(secret: Uint8Array, keySpec: string, key: string): Uint8Array {
  let cache = pkCaches.get(secret);
  if (cache === undefined) {
    cache = new Map();
    pkCaches.set(secret, cache);
  }
  const id = keySpec + '\u0000' + key;
  let pk = cache.get(id);
  if (pk === undefined) {
    const mac = createHmac('sha256', secret).update(keySpec).update('\u0000').update(key).digest();
    pk = new Uint8Array(mac.buffer, mac.byteOffset, PK_BYTES);
    // Bounded: a key flood empties the cache, it never grows past PK_CACHE_SIZE.
    if (cache.size >= PK_CACHE_SIZE) cache.clear();
    cache.set(id, pk);
  }
  return pk;
}

/** Partition keys already computed, per secret (an HMAC per request and limit is the dominant cost of advertising). */
const pkCaches = new WeakMap<Uint8Array, Map<string, Uint8Array>>();
const PK_CACHE_SIZE = 10_000;

function limitFor(limits: readonly CompiledLimit[], r: LimitResult, i: number): CompiledLimit | undefined {
  const l = limits[i];
  if (l !== undefined && l.name === r.name) return l;
  return limits.find((x) => x.name === r.name);
}

/** The limits this caller may be told about, with their advertised numbers. */
export function advertisedLimits(decision: Decision, context: MapContext, o: ResolvedResponseOptions): AdvertisedLimit[] {
  const out: AdvertisedLimit[] = [];
  decision.results.forEach((r, i) => {
    if (r.shadow || r.source === 'none') return;
    const l = limitFor(context.limits, r, i);
    if (l === undefined) return;
    if (l.status === 503 && !o.advertiseCapacity) return;
    const concurrency = l.algorithm === 'concurrency';
    const q = r.limit;
    const violated = !r.allowed;
    let remaining = Math.max(0, Math.floor(r.remaining));
    if (!concurrency && o.windowCapMs !== undefined && r.windowMs > o.windowCapMs) {
      remaining = Math.min(remaining, Math.ceil((q * o.windowCapMs) / r.windowMs));
    }
    let t: number | undefined;
    if (violated) t = Number.isFinite(r.retryAfterMs) ? retryAfterSeconds(r.retryAfterMs) : undefined;
    else if (!concurrency) t = retryAfterSeconds(r.resetMs);
    let pk: Uint8Array | undefined;
    if (o.partitionKeys && l.keySpec !== 'global' && context.keyOf !== undefined) {
      const key = context.keyOf(l);
      if (key !== undefined) pk = partitionKey(o.partitionKeySecret, l.keySpec, key);
    }
    out.push({
      name: l.name,
      q,
      w: concurrency ? undefined : Math.max(1, Math.ceil(r.windowMs / 1000)),
      qu: concurrency ? 'concurrent-requests' : l.costSpec === 'content-length' ? 'content-bytes' : undefined,
      pk,
      r: remaining,
      t,
      violated,
    });
  });
  return out;
}

/** Whether this caller is told the policy table. */
export function isAdvertising(authenticated: boolean, o: ResolvedResponseOptions): boolean {
  return o.advertise === 'always' || (o.advertise === 'authenticated' && authenticated);
}

function pickOne(decision: Decision, limits: readonly AdvertisedLimit[]): AdvertisedLimit | undefined {
  if (!decision.allowed) return limits.find((l) => l.name === decision.limitName) ?? limits.find((l) => l.violated);
  let best: AdvertisedLimit | undefined;
  for (const l of limits) if (best === undefined || l.r < best.r) best = l;
  return best;
}

function addFields(headers: Record<string, string>, decision: Decision, limits: readonly AdvertisedLimit[], o: ResolvedResponseOptions): void {
  if (limits.length === 0) return;
  if (o.fields === 'draft-10') {
    headers['RateLimit-Policy'] = policyField(limits);
    // On a rejection only the violated policies are listed, so every `t` in the response is <= Retry-After.
    const current = decision.allowed ? limits : limits.filter((l) => l.violated);
    if (current.length > 0) headers['RateLimit'] = rateLimitField(current);
  }
  const one = pickOne(decision, limits);
  if (one === undefined) return;
  if (o.fields === 'draft-7') {
    headers['RateLimit-Policy'] = legacyPolicyField([one]);
    headers['RateLimit'] = draft7RateLimitField(one);
  } else if (o.fields === 'draft-6') {
    headers['RateLimit-Policy'] = legacyPolicyField([one]);
    Object.assign(headers, draft6Fields(one));
  }
  if (o.legacyHeaders) {
    headers['X-RateLimit-Limit'] = String(one.q);
    headers['X-RateLimit-Remaining'] = String(one.r);
    headers['X-RateLimit-Reset'] = String(Math.ceil(o.clock.now() / 1000) + (one.t ?? 0));
  }
}

function problem(decision: Decision, never: boolean, seconds: number, violated: readonly string[] | undefined): ProblemDetails {
  const base =
    never || decision.status !== 503
      ? { type: PROBLEM_TYPES.quotaExceeded, title: 'Quota Exceeded' }
      : { type: PROBLEM_TYPES.temporaryReducedCapacity, title: 'Temporary Reduced Capacity' };
  const unit = seconds === 1 ? 'second' : 'seconds';
  const detail = never
    ? 'This request costs more than the quota can ever admit; retrying it will not help.'
    : decision.status === 503
      ? `The service is temporarily reducing capacity. Retry after ${seconds} ${unit}.`
      : `Too many requests. Retry after ${seconds} ${unit}.`;
  const status = never ? NEVER_FITS_STATUS : decision.status;
  return violated !== undefined && violated.length > 0 ? { ...base, status, detail, 'violated-policies': violated } : { ...base, status, detail };
}

/**
 * Maps a decision to the HTTP answer; the one implementation every adapter uses.
 *
 * - Allowed: status 200 and, when advertising, the rate-limit fields to add to the application's response.
 * - Rejected: the deciding limit's status (429 per-client, 503 global / shedding / fail-closed), `Retry-After` =
 *   ceil(retryAfterMs / 1000), `Cache-Control: no-store`, and an RFC 9457 problem+json body.
 * - Denied by an allow/deny list (outcome `'denied'`): 403, problem+json, no `Retry-After` and no rate-limit fields.
 * - Rejected with `retryAfterMs === Infinity` (the cost can never fit): 413 without `Retry-After`, since no wait helps.
 *
 * Unauthenticated callers (with `advertise: 'authenticated'`) get no policy names, fields or partition keys.
 */
export function mapDecision(decision: Decision, context: MapContext, o: ResolvedResponseOptions): HttpResponse {
  const advertising = isAdvertising(context.authenticated, o);
  const headers: Record<string, string> = {};
  const limits = advertising && (o.fields !== false || o.legacyHeaders || !decision.allowed) ? advertisedLimits(decision, context, o) : [];
  if (decision.allowed) {
    if (advertising) addFields(headers, decision, limits, o);
    return { status: 200, headers, body: undefined };
  }
  if (decision.outcome === 'denied') return forbiddenResponse();
  const never = !Number.isFinite(decision.retryAfterMs);
  const seconds = never ? 0 : retryAfterSeconds(decision.retryAfterMs);
  if (!never) headers['Retry-After'] = String(seconds);
  headers['Cache-Control'] = 'no-store';
  headers['Content-Type'] = PROBLEM_MEDIA_TYPE;
  if (advertising) addFields(headers, decision, limits, o);
  const violated = advertising ? limits.filter((l) => l.violated).map((l) => l.name) : undefined;
  const body = problemBody(problem(decision, never, seconds, violated));
  return { status: never ? NEVER_FITS_STATUS : decision.status, headers, body };
}

/** The answer to a request a deny list matched: 403, no `Retry-After` (no wait helps), no policy information. */
export function forbiddenResponse(): HttpResponse {
  return {
    status: 403,
    headers: { 'Cache-Control': 'no-store', 'Content-Type': PROBLEM_MEDIA_TYPE },
    body: problemBody({ type: 'about:blank', title: 'Forbidden', status: 403, detail: 'This client may not make this request; retrying will not help.' }),
  };
}

/** The answer when something unexpected failed (never a 500): 503, `Retry-After`, no policy information. */
export function unavailableResponse(retryAfterMs: number): HttpResponse {
  const seconds = retryAfterSeconds(retryAfterMs);
  return {
    status: 503,
    headers: { 'Retry-After': String(seconds), 'Cache-Control': 'no-store', 'Content-Type': PROBLEM_MEDIA_TYPE },
    body: problemBody({
      type: PROBLEM_TYPES.temporaryReducedCapacity,
      title: 'Temporary Reduced Capacity',
      status: 503,
      detail: `The service is temporarily reducing capacity. Retry after ${seconds} ${seconds === 1 ? 'second' : 'seconds'}.`,
    }),
  };
}

/** The answer to a body over `maxBodyBytes`: 413, and the connection is closed rather than drained. */
export function contentTooLargeResponse(maxBodyBytes: number): HttpResponse {
  return {
    status: 413,
    headers: { 'Cache-Control': 'no-store', 'Content-Type': PROBLEM_MEDIA_TYPE, Connection: 'close' },
    body: problemBody({ type: 'about:blank', title: 'Content Too Large', status: 413, detail: `The request body exceeds ${maxBodyBytes} bytes.` }),
  };
}
