import { RLS_UNITS, type RlsUnit } from './config.js';
import type { RlsDescriptor, RlsRequest, RlsResponse } from './engine.js';
import type { Entry } from './descriptor-match.js';

/** Every enum name of the unit (`SECOND`...), mapped to ours; `UNKNOWN` and the rest to `undefined`. */
function unitFrom(v: unknown): RlsUnit | undefined {
  if (typeof v === 'number') return (['', 'second', 'minute', 'hour', 'day', 'month', 'year', 'week'] as const)[v] || undefined;
  if (typeof v !== 'string') return undefined;
  const u = v.toLowerCase();
  return (RLS_UNITS as readonly string[]).includes(u) ? (u as RlsUnit) : undefined;
}

function asString(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}

/** Largest uint32, the type of `requests_per_unit` and of the request's `hits_addend`. */
const MAX_UINT32 = 0xffff_ffff;

/** A uint32 (`max` 2^32 - 1) or uint64 (`max` Infinity) as a number (proto3 JSON writes 64-bit integers as strings); invalid input is refused. */
function asCount(v: unknown, path: string, max: number): number {
  if (v === undefined || v === null) return 0;
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new TypeError(`${path} must be a non-negative integer, got ${JSON.stringify(v)}`);
  if (n > max) throw new TypeError(`${path} must be a non-negative integer of at most ${max} (a uint32), got ${JSON.stringify(v)}`);
  return n;
}

function pick(o: Record<string, unknown>, snake: string, camel: string): unknown {
  return o[snake] ?? o[camel];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A `RateLimitRequest` from the object grpc-js decodes (snake_case fields,
 * enums as names) or from proto3 JSON (lowerCamelCase, or the original names,
 * both accepted as protojson does). Throws `TypeError` on a shape the proto
 * cannot have.
 */
export function requestFrom(raw: unknown): RlsRequest {
  if (!isRecord(raw)) throw new TypeError('the request must be an object');
  const list = raw.descriptors ?? [];
  if (!Array.isArray(list)) throw new TypeError('descriptors must be a list');
  const descriptors: RlsDescriptor[] = list.map((d: unknown, i): RlsDescriptor => {
    if (!isRecord(d)) throw new TypeError(`descriptors[${i}] must be an object`);
    const rawEntries = d.entries ?? [];
    if (!Array.isArray(rawEntries)) throw new TypeError(`descriptors[${i}].entries must be a list`);
    const entries: Entry[] = rawEntries.map((e: unknown, j): Entry => {
      if (!isRecord(e)) throw new TypeError(`descriptors[${i}].entries[${j}] must be an object`);
      return { key: asString(e.key), value: asString(e.value) };
    });
    const limit = d.limit;
    const hits = pick(d, 'hits_addend', 'hitsAddend');
    const hitsAddend = hits === undefined || hits === null ? undefined : asCount(isRecord(hits) ? hits.value : hits, `descriptors[${i}].hits_addend`, Infinity);
    return {
      entries,
      ...(isRecord(limit) && {
        limit: { requestsPerUnit: asCount(pick(limit, 'requests_per_unit', 'requestsPerUnit'), `descriptors[${i}].limit.requests_per_unit`, MAX_UINT32), unit: unitFrom(limit.unit) },
      }),
      ...(hitsAddend !== undefined && { hitsAddend }),
    };
  });
  return { domain: asString(raw.domain), descriptors, hitsAddend: asCount(pick(raw, 'hits_addend', 'hitsAddend'), 'hits_addend', MAX_UINT32) };
}

function duration(ms: number): { seconds: number; nanos: number } {
  const whole = Math.floor(ms);
  return { seconds: Math.floor(whole / 1000), nanos: (whole % 1000) * 1_000_000 };
}

/** The response as grpc-js encodes it (snake_case, enums by name). */
export function grpcResponse(r: RlsResponse): Record<string, unknown> {
  return {
    overall_code: r.overallCode,
    statuses: r.statuses.map((s) => ({
      code: s.code,
      ...(s.currentLimit !== undefined && {
        current_limit: { requests_per_unit: s.currentLimit.requestsPerUnit, unit: s.currentLimit.unit, ...(s.currentLimit.name !== undefined && { name: s.currentLimit.name }) },
      }),
      limit_remaining: s.limitRemaining,
      ...(s.durationUntilResetMs !== undefined && { duration_until_reset: duration(s.durationUntilResetMs) }),
    })),
    response_headers_to_add: r.responseHeadersToAdd.map((h) => ({ key: h.key, value: h.value })),
  };
}

function jsonDuration(ms: number): string {
  const d = duration(ms);
  if (d.nanos === 0) return `${d.seconds}s`;
  return `${d.seconds}.${String(d.nanos / 1_000_000).padStart(3, '0')}s`;
}

/** The response as proto3 JSON (lowerCamelCase, enums by name, default values left out, durations as `"1.5s"`). */
export function jsonResponse(r: RlsResponse): Record<string, unknown> {
  return {
    overallCode: r.overallCode,
    statuses: r.statuses.map((s) => ({
      code: s.code,
      ...(s.currentLimit !== undefined && {
        currentLimit: {
          ...(s.currentLimit.name !== undefined && { name: s.currentLimit.name }),
          ...(s.currentLimit.requestsPerUnit !== 0 && { requestsPerUnit: s.currentLimit.requestsPerUnit }),
          unit: s.currentLimit.unit,
        },
      }),
      ...(s.limitRemaining !== 0 && { limitRemaining: s.limitRemaining }),
      ...(s.durationUntilResetMs !== undefined && { durationUntilReset: jsonDuration(s.durationUntilResetMs) }),
    })),
    ...(r.responseHeadersToAdd.length > 0 && { responseHeadersToAdd: r.responseHeadersToAdd.map((h) => ({ key: h.key, value: h.value })) }),
  };
}
