import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { CHANNELS } from '../core/events.js';
import type { FailClosedEvent, FallbackEvent, StoreFailureReason } from '../core/events.js';
import type { BreakerState } from '../core/store-circuit.js';
import type { Limiter } from '../core/limiter.js';
import type { Decision, Outcome } from '../core/types.js';
import { mergedStoreHealth } from './health.js';
import { limitOutcome } from './outcome.js';
import { OUTCOMES, STORE_ERROR_KINDS } from './series.js';

/**
 * Most distinct limit (and, separately, store) names one tally labels.
 * Names come from configuration, not from requests, so this is only a
 * backstop: past it, new names are counted under `(other)`.
 */
export const MAX_LABEL_VALUES = 1000;
/** The label value past `MAX_LABEL_VALUES`, and of a store name that is not a plain identifier. */
export const OTHER_LABEL = '(other)';

/** Store names as labels: plain identifiers (and `(default)`); anything else is shown as `(other)`. */
const STORE_LABEL = /^[A-Za-z0-9_.:()-]{1,64}$/;

const OUTCOME_INDEX = new Map<Outcome, number>(OUTCOMES.map((o, i) => [o, i]));
const KIND_INDEX = new Map<StoreFailureReason, number>(STORE_ERROR_KINDS.map((k, i) => [k, i]));

/** Counts of one limit: one per outcome, then fallbacks and fail-closed rejections. */
interface LimitCounts {
  readonly label: string;
  readonly outcomes: Float64Array;
  fallback: number;
  failClosed: number;
}

interface StoreCounts {
  readonly label: string;
  readonly errors: Float64Array;
  breaker: BreakerState | undefined;
  /** The last state of each of the store's breakers ('' for its own, else a node's). */
  readonly nodes: Map<string, BreakerState>;
}

function limitCounts(label: string): LimitCounts {
  return { label, outcomes: new Float64Array(OUTCOMES.length), fallback: 0, failClosed: 0 };
}

function storeCounts(label: string): StoreCounts {
  return { label, errors: new Float64Array(STORE_ERROR_KINDS.length), breaker: undefined, nodes: new Map() };
}

/** Called with each store call's duration, for the histogram bindings. */
export type StoreCallSink = (store: string, seconds: number, ok: boolean) => void;

interface DecisionMessage {
  readonly decision: Decision;
}
interface StoreErrorMessage {
  readonly store: string;
  readonly reason: StoreFailureReason;
}
interface BreakerMessage {
  readonly store: string;
  readonly to: BreakerState;
  readonly node?: string | undefined;
}
/** The payloads of `ratecontract:fallback` and `ratecontract:fail-closed`, as far as the tally reads them. */
type LimitMessage = Pick<FallbackEvent & FailClosedEvent, 'limitName'>;
interface ReplicasMessage {
  readonly replicas: number;
}
interface StoreCallMessage {
  readonly store: string;
  readonly durationMs: number;
  readonly ok: boolean;
}

/**
 * The core's events, counted: what both metric bindings read at collection
 * time. Counting into typed arrays keeps the cost per decision to a map
 * lookup per limit; the bindings turn the counts into series only when
 * scraped. Only names (of limits and stores) and fixed words become labels:
 * never a key, never an error message.
 */
export class MetricsTally {
  readonly #limits = new Map<string, LimitCounts>();
  readonly #stores = new Map<string, StoreCounts>();
  readonly #limiters: (() => Iterable<Limiter>) | undefined;
  readonly #onStoreCall: StoreCallSink | undefined;
  #replicas: number | undefined;
  readonly #subscriptions: Array<[string, (message: unknown) => void]> = [];

  constructor(limiters?: () => Iterable<Limiter>, onStoreCall?: StoreCallSink) {
    this.#limiters = limiters;
    this.#onStoreCall = onStoreCall;
    this.#on(CHANNELS.decision, (m: DecisionMessage) => this.#decision(m.decision));
    this.#on(CHANNELS.storeError, (m: StoreErrorMessage) => {
      const i = KIND_INDEX.get(m.reason);
      if (i === undefined) return;
      const s = this.#store(m.store);
      s.errors[i] = (s.errors[i] as number) + 1;
    });
    this.#on(CHANNELS.breaker, (m: BreakerMessage) => {
      const s = this.#store(m.store);
      // A store with per-node breakers (a Redis Cluster) is open while any of its nodes is.
      s.nodes.set(m.node ?? '', m.to);
      let worst: BreakerState = 'closed';
      for (const state of s.nodes.values()) if (state === 'open' || (state === 'half-open' && worst === 'closed')) worst = state;
      s.breaker = worst;
    });
    this.#on(CHANNELS.fallback, (m: LimitMessage) => {
      this.#limit(m.limitName).fallback++;
    });
    this.#on(CHANNELS.failClosed, (m: LimitMessage) => {
      this.#limit(m.limitName).failClosed++;
    });
    this.#on(CHANNELS.replicas, (m: ReplicasMessage) => {
      this.#replicas = m.replicas;
    });
    if (onStoreCall !== undefined) {
      this.#on(CHANNELS.storeCall, (m: StoreCallMessage) => onStoreCall(this.#store(m.store).label, m.durationMs / 1000, m.ok));
    }
  }

  /** `[limit, outcome, count]` for every limit seen or configured and every outcome. */
  decisions(): Array<[string, Outcome, number]> {
    this.#zeroFill();
    const sums = new Map<string, Float64Array>();
    for (const c of this.#limits.values()) {
      const into = sums.get(c.label);
      if (into === undefined) sums.set(c.label, Float64Array.from(c.outcomes));
      else c.outcomes.forEach((n, i) => (into[i] = (into[i] as number) + n));
    }
    const out: Array<[string, Outcome, number]> = [];
    for (const [label, counts] of sums) counts.forEach((n, i) => out.push([label, OUTCOMES[i] as Outcome, n]));
    return out;
  }

  /** `[limit, count]` of decisions made by fail modes. */
  fallbacks(): Array<[string, number]> {
    this.#zeroFill();
    return this.#sumBy(this.#limits.values(), (c) => c.fallback);
  }

  /** `[limit, count]` of fail-closed rejections. */
  failClosed(): Array<[string, number]> {
    this.#zeroFill();
    return this.#sumBy(this.#limits.values(), (c) => c.failClosed);
  }

  /** `[store, kind, count]` for every store seen or configured and every kind. */
  storeErrors(): Array<[string, StoreFailureReason, number]> {
    this.#zeroFill();
    const sums = new Map<string, Float64Array>();
    for (const s of this.#stores.values()) {
      const into = sums.get(s.label);
      if (into === undefined) sums.set(s.label, Float64Array.from(s.errors));
      else s.errors.forEach((n, i) => (into[i] = (into[i] as number) + n));
    }
    const out: Array<[string, StoreFailureReason, number]> = [];
    for (const [label, counts] of sums) counts.forEach((n, i) => out.push([label, STORE_ERROR_KINDS[i] as StoreFailureReason, n]));
    return out;
  }

  /**
   * `[store, 0 | 1]`: 1 while a breaker of the store is open or half-open.
   * Read from `limiters()` when given (every limiter's breaker for the
   * store, at its worst), else from the last breaker event of each store.
   */
  breakerOpen(): Array<[string, number]> {
    const states = new Map<string, number>();
    const put = (name: string, state: BreakerState | undefined): void => {
      if (state === undefined) return;
      const label = this.#store(name).label;
      states.set(label, Math.max(states.get(label) ?? 0, state === 'closed' ? 0 : 1));
    };
    if (this.#limiters !== undefined) {
      for (const [name, h] of mergedStoreHealth(this.#limiters())) put(name, h.state);
    } else {
      for (const [name, s] of this.#stores) put(name, s.breaker);
    }
    return [...states];
  }

  /** k: the largest of the limiters' replica counts when `limiters()` is given, else the last replicas event's. */
  replicas(): number | undefined {
    if (this.#limiters === undefined) return this.#replicas;
    let k: number | undefined;
    for (const l of this.#limiters()) k = Math.max(k ?? 0, l.replicas);
    return k ?? this.#replicas;
  }

  /** Stops counting. */
  close(): void {
    for (const [name, fn] of this.#subscriptions.splice(0)) unsubscribe(name, fn);
  }

  #on<M>(name: string, fn: (message: M) => void): void {
    const listener = fn as (message: unknown) => void;
    subscribe(name, listener);
    this.#subscriptions.push([name, listener]);
  }

  #decision(decision: Decision): void {
    for (const r of decision.results) {
      const outcome = limitOutcome(r);
      if (outcome === undefined) continue;
      const c = this.#limit(r.name);
      const i = OUTCOME_INDEX.get(outcome) as number;
      c.outcomes[i] = (c.outcomes[i] as number) + 1;
    }
  }

  #limit(name: string): LimitCounts {
    const c = this.#limits.get(name);
    if (c !== undefined) return c;
    if (this.#limits.size >= MAX_LABEL_VALUES) return this.#other(this.#limits, () => limitCounts(OTHER_LABEL));
    const made = limitCounts(name);
    this.#limits.set(name, made);
    return made;
  }

  #store(name: string): StoreCounts {
    const s = this.#stores.get(name);
    if (s !== undefined) return s;
    if (this.#stores.size >= MAX_LABEL_VALUES || !STORE_LABEL.test(name)) return this.#other(this.#stores, () => storeCounts(OTHER_LABEL));
    const made = storeCounts(name);
    this.#stores.set(name, made);
    return made;
  }

  /** The shared `(other)` entry of a map (kept under a key no name can take). */
  #other<T>(map: Map<string, T>, make: () => T): T {
    const key = '\u0000other';
    let v = map.get(key);
    if (v === undefined) {
      v = make();
      map.set(key, v);
    }
    return v;
  }

  /** Gives every configured limit and store its series from the start, at 0, so `rate()` and `increase()` see the first event. */
  #zeroFill(): void {
    if (this.#limiters === undefined) return;
    for (const limiter of this.#limiters()) {
      for (const l of limiter.limits) this.#limit(l.name);
      for (const name of Object.keys(limiter.storeHealth())) this.#store(name);
    }
  }

  #sumBy<T extends { readonly label: string }>(entries: Iterable<T>, value: (entry: T) => number): Array<[string, number]> {
    const sums = new Map<string, number>();
    for (const e of entries) sums.set(e.label, (sums.get(e.label) ?? 0) + value(e));
    return [...sums];
  }
}
