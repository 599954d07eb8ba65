import { createHmac, randomBytes } from 'node:crypto';
import { ConfigError } from './errors.js';
import { shadowChannel } from './events.js';
import { refuseUnknown } from './options.js';
import type { CompiledLimit } from './types.js';

/**
 * Options of the live shadow report (`createLimiter({ shadowReport })`):
 * for each limit with `shadow: true`, a bounded top-K of the keys it would
 * have rejected over a sliding period (docs/metrics.md, "Shadow report").
 */
export interface ShadowReportOptions {
  /** The sliding period the figures cover, in ms. Default 3,600,000 (one hour). */
  readonly periodMs?: number | undefined;
  /** Buckets the period slides by (the report drops one bucket, periodMs / buckets, at a time). Integer 1 to 60; default 6. */
  readonly buckets?: number | undefined;
  /** Counters of each bucket's space-saving sketch (K). Integer 10 to 10,000; default 64. Memory: buckets x capacity counters per shadowed limit. */
  readonly capacity?: number | undefined;
  /**
   * The key the anonymous keys (IPs, phone numbers, headers: every key
   * spec but `principal`) are hashed with (HMAC-SHA-256) before the sketch
   * sees them. Default: 32 random bytes per limiter, so hashes do not
   * repeat across processes or restarts; set one (at least 16 characters)
   * to compare reports of several replicas.
   */
  readonly secret?: string | undefined;
}

const OPTIONS: readonly string[] = ['periodMs', 'buckets', 'capacity', 'secret'];

/** One key of a shadow report's top list. */
export interface ShadowKeyCount {
  /** A principal's name (key spec `principal`, at most 64 characters), `(global)`, or `#` and 22 characters of the keyed hash of any other key. */
  readonly key: string;
  readonly kind: 'principal' | 'hash' | 'global';
  /** Would-be rejections in the period, as the sketch counts them: never below the true count in the buckets that track the key. */
  readonly wouldReject: number;
  /** A lower bound on the true count (the sketch's estimate less its possible overcount). */
  readonly atLeast: number;
}

/** `ratecontract:shadow`, and each entry of `limiter.shadowReport()`: what a promotion decision needs, per shadowed limit. */
export interface ShadowReport {
  /** The limit's name. */
  readonly limitName: string;
  /** The limit's key spec (`'ip'`, `'principal'`, `'header.x-tenant'`, `'function'` ...). */
  readonly keySpec: string;
  /** The limiter's clock at the report. */
  readonly now: number;
  /** How long this limiter has run the limit in shadow (since it was created; a reload starts again). */
  readonly inShadowMs: number;
  /** The span the figures cover: the sliding period, or less while the limit has been in shadow for less. */
  readonly periodMs: number;
  /** Checks of the limit in the period (each check that reached the limit's store or fail mode). */
  readonly checks: number;
  /** Of those, the checks the limit would have rejected. */
  readonly wouldReject: number;
  /** `wouldReject / checks` (0 without checks). */
  readonly wouldRejectRate: number;
  /** The share of the would-be rejections taken by the top 10 keys (from the sketch's counts, at most 1). */
  readonly top10Share: number;
  /** The top 10 keys by would-be rejections, most first. */
  readonly top: readonly ShadowKeyCount[];
  /** The sketch's size: counters held now and at most (buckets x capacity), and the bytes that most can take. */
  readonly sketch: { readonly counters: number; readonly maxCounters: number; readonly maxBytes: number };
}

/**
 * Bytes one counter takes at most, measured: a label of up to 64
 * characters, its Map entry (with the table's slack and the deleted slots
 * an eviction leaves until the table rehashes) and the counter object.
 * `test/unit/core/shadow-report.test.ts` measures full sketches of 64-character
 * labels under eviction (about 300 bytes a counter on Node 20) and holds
 * them below this.
 */
export const SHADOW_BYTES_PER_COUNTER = 384;
const TOP = 10;
const LABEL_CHARS = 64;
const CACHE_MAX = 4096;

interface Counter {
  count: number;
  err: number;
}

/** One bucket: its start, its traffic, and a space-saving sketch of its would-be rejections. */
interface Bucket {
  start: number;
  checks: number;
  rejects: number;
  readonly counters: Map<string, Counter>;
}

/**
 * Space-saving (Metwally, Agrawal, El Abbadi 2005) over one bucket: at most
 * `capacity` counters; an untracked key takes over the smallest counter
 * (count min + 1, overcount min). Every key whose true count exceeds
 * rejects / capacity holds a counter, and each count overstates the truth by
 * at most its `err`.
 */
function spaceSave(b: Bucket, label: string, capacity: number): void {
  const c = b.counters.get(label);
  if (c !== undefined) {
    c.count++;
    return;
  }
  if (b.counters.size < capacity) {
    b.counters.set(label, { count: 1, err: 0 });
    return;
  }
  let minLabel = '';
  let min = Infinity;
  for (const [l, v] of b.counters) {
    if (v.count < min) {
      min = v.count;
      minLabel = l;
    }
  }
  b.counters.delete(minLabel);
  b.counters.set(label, { count: min + 1, err: min });
}

function minCount(b: Bucket): number {
  let min = Infinity;
  for (const v of b.counters.values()) if (v.count < min) min = v.count;
  return min;
}

/** The figures of one shadowed limit over a sliding period of buckets. */
export class ShadowSketch {
  readonly #buckets: Bucket[];
  readonly #width: number;
  readonly #capacity: number;
  readonly #since: number;
  readonly #label: (key: string) => string;
  readonly kind: ShadowKeyCount['kind'];

  constructor(
    readonly limit: string,
    readonly keySpec: string,
    readonly periodMs: number,
    buckets: number,
    capacity: number,
    since: number,
    label: (key: string) => string,
  ) {
    this.#width = Math.max(1, Math.floor(periodMs / buckets));
    this.#capacity = capacity;
    this.#since = since;
    this.#label = label;
    this.kind = keySpec === 'principal' ? 'principal' : keySpec === 'global' ? 'global' : 'hash';
    this.#buckets = Array.from({ length: buckets }, () => ({ start: -Infinity, checks: 0, rejects: 0, counters: new Map<string, Counter>() }));
  }

  /** The bucket of `now`; true when it had to be started (the period slid). */
  #bucket(now: number): [Bucket, boolean] {
    const index = Math.floor(now / this.#width);
    const b = this.#buckets[index % this.#buckets.length] as Bucket;
    const start = index * this.#width;
    if (b.start === start) return [b, false];
    const slid = b.start < start;
    if (slid) {
      b.start = start;
      b.checks = 0;
      b.rejects = 0;
      b.counters.clear();
    }
    return [b, slid];
  }

  /** One check of the limit: `rejected` when it would have rejected it, `key` the limit's key. Returns true when the period slid (a bucket began). */
  observe(key: string | undefined, rejected: boolean, now: number): boolean {
    const [b, slid] = this.#bucket(now);
    // A check stamped before the bucket it maps to was recycled (a clock that went back) is not counted.
    if (b.start > now) return slid;
    b.checks++;
    if (rejected) {
      b.rejects++;
      spaceSave(b, this.kind === 'global' ? '(global)' : this.#label(key ?? ''), this.#capacity);
    }
    return slid;
  }

  /** Counters held now, over every bucket. */
  get counters(): number {
    let n = 0;
    for (const b of this.#buckets) n += b.counters.size;
    return n;
  }

  /**
   * Every key some live bucket tracks, with its summed count, the summed
   * overcount of the buckets that track it, and what the full buckets that
   * do not track it could still hold of it (their smallest count each).
   */
  candidates(now: number): Map<string, { count: number; err: number; unseen: number }> {
    const live = this.#live(now);
    const out = new Map<string, { count: number; err: number; unseen: number }>();
    for (const b of live) {
      for (const [label, c] of b.counters) {
        const e = out.get(label);
        if (e === undefined) out.set(label, { count: c.count, err: c.err, unseen: 0 });
        else {
          e.count += c.count;
          e.err += c.err;
        }
      }
    }
    for (const b of live) {
      if (b.counters.size < this.#capacity) continue;
      const min = minCount(b);
      for (const [label, e] of out) if (!b.counters.has(label)) e.unseen += min;
    }
    return out;
  }

  #live(now: number): Bucket[] {
    const from = Math.floor(now / this.#width) * this.#width - (this.#buckets.length - 1) * this.#width;
    return this.#buckets.filter((b) => b.start >= from && b.start <= now);
  }

  report(now: number): ShadowReport {
    const live = this.#live(now);
    let checks = 0;
    let rejects = 0;
    for (const b of live) {
      checks += b.checks;
      rejects += b.rejects;
    }
    const ranked = [...this.candidates(now)].sort((a, b) => b[1].count - a[1].count || (a[0] < b[0] ? -1 : 1)).slice(0, TOP);
    const topSum = ranked.reduce((s, [, c]) => s + c.count, 0);
    const inShadowMs = Math.max(0, now - this.#since);
    const periodStart = Math.floor(now / this.#width) * this.#width - (this.#buckets.length - 1) * this.#width;
    const maxCounters = this.#buckets.length * this.#capacity;
    return {
      limitName: this.limit,
      keySpec: this.keySpec,
      now,
      inShadowMs,
      periodMs: Math.min(now - periodStart, inShadowMs),
      checks,
      wouldReject: rejects,
      wouldRejectRate: checks === 0 ? 0 : rejects / checks,
      top10Share: rejects === 0 ? 0 : Math.min(1, topSum / rejects),
      top: ranked.map(([key, c]) => ({ key, kind: key === '(global)' ? 'global' : this.kind, wouldReject: c.count, atLeast: c.count - c.err })),
      sketch: { counters: this.counters, maxCounters, maxBytes: maxCounters * SHADOW_BYTES_PER_COUNTER },
    };
  }
}

function intOption(v: unknown, path: string, min: number, max: number, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
    throw new ConfigError('RC_INVALID_OPTION', path, `must be an integer from ${min} to ${max}, got ${typeof v === 'number' ? String(v) : typeof v}`);
  }
  return v;
}

/** The shadow report of one limiter: a sketch per shadowed limit (index in the chain), or nothing when none is shadowed or the report is off. */
export class ShadowWatch {
  readonly #sketches: Array<ShadowSketch | undefined>;

  private constructor(sketches: Array<ShadowSketch | undefined>) {
    this.#sketches = sketches;
  }

  /** Validates `shadowReport` (a `ShadowReportOptions`, or `false` for none) and builds the sketches. */
  static for(limits: readonly CompiledLimit[], options: unknown, now: number): ShadowWatch | undefined {
    if (options === false) return undefined;
    if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
      throw new ConfigError('RC_INVALID_OPTION', 'shadowReport', 'must be an object ({ periodMs, buckets, capacity, secret }) or false');
    }
    const o = (options ?? {}) as Record<string, unknown>;
    refuseUnknown(o, OPTIONS, 'shadowReport');
    const periodMs = intOption(o.periodMs, 'shadowReport.periodMs', 1000, 30 * 86_400_000, 3_600_000);
    const buckets = intOption(o.buckets, 'shadowReport.buckets', 1, 60, 6);
    const capacity = intOption(o.capacity, 'shadowReport.capacity', 10, 10_000, 64);
    if (o.secret !== undefined && (typeof o.secret !== 'string' || o.secret.length < 16)) {
      throw new ConfigError('RC_INVALID_OPTION', 'shadowReport.secret', 'must be a string of at least 16 characters');
    }
    if (!limits.some((l) => l.shadow)) return undefined;
    const secret = o.secret ?? randomBytes(32);
    const cache = new Map<string, string>();
    const hashed = (key: string): string => {
      let label = cache.get(key);
      if (label === undefined) {
        label = `#${createHmac('sha256', secret).update(key, 'utf8').digest('base64url').slice(0, 22)}`;
        if (cache.size >= CACHE_MAX) cache.clear();
        cache.set(key, label);
      }
      return label;
    };
    const named = (key: string): string => (key.length > LABEL_CHARS ? key.slice(0, LABEL_CHARS) : key);
    return new ShadowWatch(
      limits.map((l) => (l.shadow ? new ShadowSketch(l.name, l.keySpec, periodMs, buckets, capacity, now, l.keySpec === 'principal' ? named : hashed) : undefined)),
    );
  }

  /** One check's result for the limit at `index` of the chain (a no-op for limits not in shadow). */
  observe(index: number, key: string | undefined, rejected: boolean, now: number): void {
    const s = this.#sketches[index];
    if (s === undefined) return;
    if (s.observe(key, rejected, now) && shadowChannel.hasSubscribers) shadowChannel.publish(s.report(now));
  }

  /** The report of every shadowed limit at `now`, in chain order. */
  report(now: number): ShadowReport[] {
    const out: ShadowReport[] = [];
    for (const s of this.#sketches) if (s !== undefined) out.push(s.report(now));
    return out;
  }
}
