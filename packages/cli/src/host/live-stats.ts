import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { CHANNELS, ConfigError, type Decision, type Limiter, type OnError, type Purpose } from 'ratecontract';
import type { BreakerState } from 'ratecontract';
import { mergedStoreHealth } from 'ratecontract/metrics';
import { limitOutcome } from 'ratecontract/metrics';

/** Options of `LiveStats`. */
export interface LiveStatsOptions {
  /** How far back the per-second counts go, ms: 10 s to 1 h, whole seconds. Default 5 minutes. */
  readonly windowMs?: number | undefined;
  /** Wall clock in ms. Default `Date.now`. */
  readonly now?: (() => number) | undefined;
}

/** Per-second counts, oldest first; the last entry is the current (partial) second. */
export interface RateSeries {
  /** Checks the limit admitted (by its store, its fail mode or its local fallback). */
  readonly admitted: readonly number[];
  /** Checks the limit rejected, enforced (429, or 503 for fail-closed). */
  readonly rejected: readonly number[];
  /** Checks a shadow limit would have rejected. */
  readonly shadowRejected: readonly number[];
  /** Checks decided by the limit's fail mode (its store could not answer), admitted or not. */
  readonly fallback: readonly number[];
}

/** Sums of a `RateSeries` over the window. */
export interface RateTotals {
  readonly admitted: number;
  readonly rejected: number;
  readonly shadowRejected: number;
  readonly fallback: number;
}

/** One limit in a snapshot. */
export interface LimitStats {
  readonly name: string;
  /** Names of the limiters whose chain holds the limit (routes for serve, rules for rls). */
  readonly limiters: readonly string[];
  readonly purpose: Purpose;
  readonly onError: OnError;
  readonly shadow: boolean;
  /** The limit's store name; `(default)` for the default store. */
  readonly store: string;
  readonly totals: RateTotals;
  readonly series: RateSeries;
}

/** One store in a snapshot, across the limiters that use it (at its worst: see `mergedStoreHealth`). */
export interface StoreStats {
  readonly name: string;
  readonly state: BreakerState;
  readonly failureRate: number;
  /** Calls in the breaker's window. */
  readonly calls: number;
  readonly inFlight: number;
  readonly ready: boolean;
  /** 99th percentile of the store calls of the last `LATENCY_WINDOW_MS`, ms; `null` without calls (in-process stores make none). */
  readonly p99Ms: number | null;
  /** Store calls the percentile is taken over. */
  readonly latencySamples: number;
}

/** What `/stats.json` serves: everything the admin page draws. */
export interface StatsSnapshot {
  /** When it was taken, ms since the epoch. */
  readonly now: number;
  readonly windowMs: number;
  /** Width of one entry of the series, ms. */
  readonly stepMs: number;
  readonly limits: readonly LimitStats[];
  readonly stores: readonly StoreStats[];
  /** The largest replica count k among the limiters; `null` without limiters. */
  readonly replicas: number | null;
}

const STEP_MS = 1000;
const DEFAULT_WINDOW_MS = 5 * 60_000;
/** Store call latency percentiles are taken over this much recent time. */
export const LATENCY_WINDOW_MS = 60_000;
/** Most store call durations kept per store (a ring; the percentile is over the newest of them). */
export const LATENCY_SAMPLES = 4096;
/** Most limits (and stores) tracked; names come from configuration, so this is a backstop. */
const MAX_TRACKED = 1000;
const ADMITTED = 0;
const REJECTED = 1;
const SHADOW = 2;
const FALLBACK = 3;
const KINDS = 4;

/** Per-second counts of one limit over a ring of seconds. */
class LimitRing {
  /** The second (since the epoch) each slot holds. */
  readonly seconds: Float64Array;
  readonly counts: Uint32Array;
  constructor(slots: number) {
    this.seconds = new Float64Array(slots).fill(-1);
    this.counts = new Uint32Array(slots * KINDS);
  }

  add(second: number, kind: number): void {
    const slots = this.seconds.length;
    const slot = second % slots;
    if (this.seconds[slot] !== second) {
      this.seconds[slot] = second;
      this.counts.fill(0, slot * KINDS, slot * KINDS + KINDS);
    }
    const i = slot * KINDS + kind;
    this.counts[i] = (this.counts[i] as number) + 1;
  }

  series(nowSecond: number): { series: RateSeries; totals: RateTotals } {
    const slots = this.seconds.length;
    const out: [number[], number[], number[], number[]] = [new Array<number>(slots), new Array<number>(slots), new Array<number>(slots), new Array<number>(slots)];
    const totals = [0, 0, 0, 0];
    for (let j = 0; j < slots; j++) {
      const second = nowSecond - slots + 1 + j;
      const slot = ((second % slots) + slots) % slots;
      const live = this.seconds[slot] === second;
      for (let k = 0; k < KINDS; k++) {
        const n = live ? (this.counts[slot * KINDS + k] as number) : 0;
        (out[k] as number[])[j] = n;
        totals[k] = (totals[k] as number) + n;
      }
    }
    return {
      series: { admitted: out[ADMITTED], rejected: out[REJECTED], shadowRejected: out[SHADOW], fallback: out[FALLBACK] },
      totals: { admitted: totals[ADMITTED] as number, rejected: totals[REJECTED] as number, shadowRejected: totals[SHADOW] as number, fallback: totals[FALLBACK] as number },
    };
  }
}

/** The newest store call durations of one store, with when they finished. */
class LatencyRing {
  readonly durations = new Float64Array(LATENCY_SAMPLES);
  readonly at = new Float64Array(LATENCY_SAMPLES);
  next = 0;
  size = 0;

  add(durationMs: number, now: number): void {
    this.durations[this.next] = durationMs;
    this.at[this.next] = now;
    this.next = (this.next + 1) % LATENCY_SAMPLES;
    if (this.size < LATENCY_SAMPLES) this.size++;
  }

  p99(now: number): { p99Ms: number | null; samples: number } {
    const recent: number[] = [];
    for (let i = 0; i < this.size; i++) if (now - (this.at[i] as number) <= LATENCY_WINDOW_MS) recent.push(this.durations[i] as number);
    if (recent.length === 0) return { p99Ms: null, samples: 0 };
    recent.sort((a, b) => a - b);
    // Nearest rank: the smallest duration at or above which lie 1% of the calls.
    const rank = Math.ceil(0.99 * recent.length) - 1;
    return { p99Ms: recent[rank] as number, samples: recent.length };
  }
}

interface DecisionMessage {
  readonly decision: Decision;
}
interface StoreCallMessage {
  readonly store: string;
  readonly durationMs: number;
}

/**
 * What the admin page shows, kept live from the core's events: per limit,
 * per-second counts of admitted, rejected, shadow-rejected and fallback
 * decisions over the last `windowMs` (a fixed ring per limit, so memory is
 * bounded); per store, the store call latency of the last minute. Store
 * health and replicas are read from the limiters at each `snapshot()`.
 * Counts every limiter in the process; `snapshot()` shows the limits of
 * the limiters it is given.
 */
export class LiveStats {
  readonly windowMs: number;
  readonly #slots: number;
  readonly #now: () => number;
  readonly #limits = new Map<string, LimitRing>();
  readonly #latency = new Map<string, LatencyRing>();
  readonly #onDecision = (message: unknown): void => this.#decision((message as DecisionMessage).decision);
  readonly #onStoreCall = (message: unknown): void => {
    const m = message as StoreCallMessage;
    let ring = this.#latency.get(m.store);
    if (ring === undefined) {
      if (this.#latency.size >= MAX_TRACKED) return;
      ring = new LatencyRing();
      this.#latency.set(m.store, ring);
    }
    ring.add(m.durationMs, this.#now());
  };
  #closed = false;

  constructor(options: LiveStatsOptions = {}) {
    const windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
    if (!Number.isSafeInteger(windowMs) || windowMs < 10_000 || windowMs > 3_600_000 || windowMs % STEP_MS !== 0) {
      throw new ConfigError('RC_INVALID_OPTION', 'windowMs', `must be whole seconds from 10000 to 3600000 ms, got ${String(windowMs)}`);
    }
    this.windowMs = windowMs;
    this.#slots = windowMs / STEP_MS;
    this.#now = options.now ?? Date.now;
    subscribe(CHANNELS.decision, this.#onDecision);
    subscribe(CHANNELS.storeCall, this.#onStoreCall);
  }

  /** The limits of `limiters` with their rates, their stores' health and latency, and the replica count. */
  snapshot(limiters: Iterable<{ readonly name: string; readonly limiter: Limiter }>): StatsSnapshot {
    const now = this.#now();
    const nowSecond = Math.floor(now / STEP_MS);
    const entries = [...limiters];
    const limits = new Map<string, { def: Limiter['limits'][number]; limiters: string[] }>();
    let replicas: number | null = null;
    for (const { name, limiter } of entries) {
      replicas = Math.max(replicas ?? 0, limiter.replicas);
      for (const def of limiter.limits) {
        const seen = limits.get(def.name);
        if (seen === undefined) limits.set(def.name, { def, limiters: [name] });
        else if (!seen.limiters.includes(name)) seen.limiters.push(name);
      }
    }
    const empty = new LimitRing(this.#slots).series(nowSecond);
    const limitStats: LimitStats[] = [...limits.values()].map(({ def, limiters: names }) => {
      const { series, totals } = this.#limits.get(def.name)?.series(nowSecond) ?? empty;
      return { name: def.name, limiters: names, purpose: def.purpose, onError: def.onError, shadow: def.shadow, store: def.storeName ?? '(default)', totals, series };
    });
    const stores: StoreStats[] = [...mergedStoreHealth(entries.map((e) => e.limiter))].map(([name, h]) => {
      const { p99Ms, samples } = this.#latency.get(name)?.p99(now) ?? { p99Ms: null, samples: 0 };
      return { name, state: h.state, failureRate: h.failureRate, calls: h.calls, inFlight: h.inFlight, ready: h.ready, p99Ms, latencySamples: samples };
    });
    return { now, windowMs: this.windowMs, stepMs: STEP_MS, limits: limitStats, stores, replicas };
  }

  /** Stops listening. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    unsubscribe(CHANNELS.decision, this.#onDecision);
    unsubscribe(CHANNELS.storeCall, this.#onStoreCall);
  }

  #decision(decision: Decision): void {
    const second = Math.floor(this.#now() / STEP_MS);
    for (const r of decision.results) {
      const outcome = limitOutcome(r);
      if (outcome === undefined) continue;
      let ring = this.#limits.get(r.name);
      if (ring === undefined) {
        if (this.#limits.size >= MAX_TRACKED) continue;
        ring = new LimitRing(this.#slots);
        this.#limits.set(r.name, ring);
      }
      if (outcome === 'shadow-rejected') ring.add(second, SHADOW);
      else if (outcome === 'rejected' || outcome === 'fail-closed') ring.add(second, REJECTED);
      else ring.add(second, ADMITTED);
      if (r.onError !== undefined) ring.add(second, FALLBACK);
    }
  }
}
