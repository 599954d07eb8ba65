import { algorithms, type AlgorithmName, type CompiledLimit } from 'ratecontract';

/**
 * The engine of `ratecontract suggest`: per limit, per key, the peak usage in
 * any window, in bounded memory. Each key's requests are counted in
 * `SUB_WINDOWS` sub-windows of W / SUB_WINDOWS ms (a ring of counts, fixed
 * size whatever the key's rate): its peak is the most it sent in any
 * SUB_WINDOWS consecutive sub-windows (a W-long span, so never above the true
 * peak in any W, and below it by at most one sub-window's count), and its
 * short peak the most in one sub-window (what a bucket's burst must take).
 *
 * Keys are kept up to `maxKeys` per limit; beyond, a uniform sample of them
 * by hash (a key is kept while its 32-bit hash is below a threshold that
 * halves whenever the limit holds more than `maxKeys`), so memory is
 * `maxKeys` keys per limit whatever the log, and the distribution is the
 * sample's (exact while no sampling was needed; `sampleRate` says which).
 */

/** Sub-windows each window is counted in. */
export const SUB_WINDOWS = 16;
/** Keys kept per limit by default (then sampled). */
export const DEFAULT_MAX_KEYS = 20_000;
/**
 * Bytes a kept key takes at most, measured (test/integration/cli/suggest-large.test.ts):
 * its counts (a Uint32Array of 16), the record and the Map entry, the key
 * itself up to 64 characters (longer keys are hashed by the replay).
 */
export const SUGGEST_BYTES_PER_KEY = 512;

const TWO32 = 4294967296;

/** One key's usage of one limit. */
class KeyUsage {
  readonly ring = new Uint32Array(SUB_WINDOWS);
  last = -1;
  sum = 0;
  peak = 0;
  peakShort = 0;
  requests = 0;
  rejected = 0;
  constructor(readonly hash: number) {}

  add(sub: number, allowed: boolean): void {
    this.requests++;
    if (!allowed) this.rejected++;
    if (sub > this.last) {
      // Drop the sub-windows that left the window (at most all of them).
      const from = this.last < 0 ? sub - SUB_WINDOWS + 1 : Math.max(this.last + 1, sub - SUB_WINDOWS + 1);
      if (this.last >= 0 && sub - this.last >= SUB_WINDOWS) {
        this.ring.fill(0);
        this.sum = 0;
      } else {
        for (let i = from; i <= sub; i++) {
          const slot = ((i % SUB_WINDOWS) + SUB_WINDOWS) % SUB_WINDOWS;
          this.sum -= this.ring[slot] as number;
          this.ring[slot] = 0;
        }
      }
      this.last = sub;
    }
    // A line a little out of order counts in the current sub-window.
    const slot = this.last % SUB_WINDOWS;
    const n = (this.ring[slot] as number) + 1;
    this.ring[slot] = n;
    this.sum++;
    if (this.sum > this.peak) this.peak = this.sum;
    if (n > this.peakShort) this.peakShort = n;
  }
}

/** FNV-1a, 32 bits: the sampling hash (not a secret; it only spreads keys). */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Percentiles of a distribution of per-key peaks. */
export interface Distribution {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** The nearest-rank percentile `p` (0 < p <= 100) of ascending `sorted`; 0 when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  // Less a hair: 99.9% of 1000 is 999.0000000000001 in doubles, and rank 999.
  const rank = Math.max(1, Math.ceil((p * sorted.length) / 100 - 1e-9));
  return sorted[Math.min(sorted.length, rank) - 1] as number;
}

function distribution(sorted: readonly number[]): Distribution {
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), p999: percentile(sorted, 99.9), max: sorted[sorted.length - 1] ?? 0 };
}

/** What `suggest` measured of one limit. */
export interface LimitUsage {
  readonly limit: CompiledLimit;
  /** Keys seen, estimated from the sample (exact when `sampleRate` is 1). */
  readonly keys: number;
  readonly sampledKeys: number;
  readonly sampleRate: number;
  /** Per-key peak in any window (W-long span of sub-windows). */
  readonly peak: Distribution;
  /** Per-key peak in one sub-window of W / 16. */
  readonly peakShort: Distribution;
  /** `peak` at the chosen percentile. */
  readonly atPercentile: number;
  readonly shortAtPercentile: number;
  /** Keys the current N rejects at least once (estimated from the sample). */
  readonly blockedKeys: number;
  /** Requests of the sampled keys, and of those the current N rejects. */
  readonly sampledRequests: number;
  readonly sampledRejected: number;
}

/** Per-limit key usage of one replay. */
export class UsageTracker {
  readonly #by = new Map<string, { limit: CompiledLimit; keys: Map<string, KeyUsage>; threshold: number; sub: number }>();
  readonly #maxKeys: number;

  constructor(limits: readonly CompiledLimit[], maxKeys = DEFAULT_MAX_KEYS) {
    this.#maxKeys = maxKeys;
    for (const l of limits) this.#by.set(l.name, { limit: l, keys: new Map(), threshold: TWO32, sub: Math.max(1, l.params.windowMs / SUB_WINDOWS) });
  }

  /** One decision of `limit` for `key` at `time` (the replay's observer). */
  readonly observe = (limit: string, key: string, allowed: boolean, time: number): void => {
    const s = this.#by.get(limit);
    if (s === undefined) return;
    let u = s.keys.get(key);
    if (u === undefined) {
      const hash = fnv1a(key);
      if (hash >= s.threshold) return;
      u = new KeyUsage(hash);
      s.keys.set(key, u);
      if (s.keys.size > this.#maxKeys) {
        // Halve the sample until it fits again.
        while (s.keys.size > this.#maxKeys) {
          s.threshold /= 2;
          for (const [k, v] of s.keys) if (v.hash >= s.threshold) s.keys.delete(k);
        }
        if (!s.keys.has(key)) return;
      }
    }
    u.add(Math.floor(time / s.sub), allowed);
  };

  /** Keys held now, over every limit. */
  get keysHeld(): number {
    let n = 0;
    for (const s of this.#by.values()) n += s.keys.size;
    return n;
  }

  /** Each limit's figures, in contract order, at percentile `p`. */
  usage(p: number): LimitUsage[] {
    return [...this.#by.values()].map((s) => {
      const rate = s.threshold / TWO32;
      const peaks: number[] = [];
      const shorts: number[] = [];
      let blocked = 0;
      let requests = 0;
      let rejected = 0;
      for (const u of s.keys.values()) {
        peaks.push(u.peak);
        shorts.push(u.peakShort);
        if (u.rejected > 0) blocked++;
        requests += u.requests;
        rejected += u.rejected;
      }
      peaks.sort((a, b) => a - b);
      shorts.sort((a, b) => a - b);
      return {
        limit: s.limit,
        keys: Math.round(s.keys.size / rate),
        sampledKeys: s.keys.size,
        sampleRate: rate,
        peak: distribution(peaks),
        peakShort: distribution(shorts),
        atPercentile: percentile(peaks, p),
        shortAtPercentile: percentile(shorts, p),
        blockedKeys: Math.round(blocked / rate),
        sampledRequests: requests,
        sampledRejected: rejected,
      };
    });
  }
}

/** The bucket algorithms, where a burst is suggested beside the rate. */
export const BURST_ALGORITHMS: ReadonlySet<AlgorithmName> = new Set(['token-bucket', 'leaky-bucket', 'gcra']);

/** N (and B) suggested for a limit: the percentile's peak times the headroom, at least 1; for a bucket, B from the short peaks, between 1 and... any. */
export function suggestion(u: LimitUsage, headroom: number): { limit: number; burst: number | undefined } {
  const limit = Math.max(1, Math.ceil(u.atPercentile * headroom));
  if (!BURST_ALGORITHMS.has(u.limit.algorithm)) return { limit, burst: undefined };
  return { limit, burst: Math.max(1, Math.ceil(u.shortAtPercentile * headroom)) };
}

const DAY_MS = 86_400_000;

/** Threat arithmetic as `audit` states it: attempts one key gets per day at N (the algorithm's bound over a day), and what that means for guessing. */
export function threat(l: CompiledLimit, limit: number, burst: number | undefined, space: number): { attemptsPerDay: number; daysToGuessHalf: number; daysToTryAll: number } {
  const p = { ...l.params, limit, burst: burst ?? (BURST_ALGORITHMS.has(l.algorithm) ? l.params.burst : limit) };
  const attemptsPerDay = algorithms[l.algorithm].bound(p, DAY_MS);
  return { attemptsPerDay, daysToGuessHalf: space / 2 / attemptsPerDay, daysToTryAll: space / attemptsPerDay };
}
