import type { Outcome } from '../core/types.js';
import type { StoreFailureReason } from '../core/events.js';

/** The stable names of the series `ratecontract/metrics` exports (docs/metrics.md). */
export const SERIES = {
  decisions: 'ratecontract_decisions_total',
  storeDuration: 'ratecontract_store_duration_seconds',
  storeErrors: 'ratecontract_store_errors_total',
  breakerOpen: 'ratecontract_breaker_open',
  fallbackDecisions: 'ratecontract_fallback_decisions_total',
  failClosed: 'ratecontract_fail_closed_total',
  replicas: 'ratecontract_replicas',
} as const;

export type SeriesName = (typeof SERIES)[keyof typeof SERIES];

/** One exported series: its type, labels and help text. */
export interface SeriesInfo {
  readonly name: SeriesName;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly labels: readonly string[];
  readonly help: string;
}

/** Every exported series, as `/metrics` shows them. */
export const SERIES_INFO: readonly SeriesInfo[] = [
  { name: SERIES.decisions, type: 'counter', labels: ['limit', 'outcome'], help: 'Verdicts of each limit on the checks it applied to, by limit and outcome.' },
  { name: SERIES.storeDuration, type: 'histogram', labels: ['store'], help: 'Wall time of store calls made through the deadline and breaker, answered or not, in seconds.' },
  { name: SERIES.storeErrors, type: 'counter', labels: ['store', 'kind'], help: 'Store calls that could not answer, by store and kind (error, timeout, breaker-open, busy).' },
  { name: SERIES.breakerOpen, type: 'gauge', labels: ['store'], help: '1 while the store\'s circuit breaker is open or half-open (the store is mostly skipped), else 0.' },
  { name: SERIES.fallbackDecisions, type: 'counter', labels: ['limit'], help: 'Decisions of a limit made by its fail mode because its store could not answer.' },
  { name: SERIES.failClosed, type: 'counter', labels: ['limit'], help: 'Rejections (503) of a closed limit for lack of its store.' },
  { name: SERIES.replicas, type: 'gauge', labels: [], help: 'Replica count k that degraded limits divide their limit by.' },
];

/** Every value of the `outcome` label of `ratecontract_decisions_total`. */
export const OUTCOMES: readonly Outcome[] = ['allowed', 'rejected', 'shadow-rejected', 'fail-open', 'degraded', 'fail-closed'];

/** Every value of the `kind` label of `ratecontract_store_errors_total`. */
export const STORE_ERROR_KINDS: readonly StoreFailureReason[] = ['error', 'timeout', 'breaker-open', 'busy'];

/**
 * Buckets of `ratecontract_store_duration_seconds`: fine from 0.5 ms to
 * 10 ms, where single-digit-millisecond deadlines sit, then coarser to 100 ms.
 */
export const STORE_DURATION_BUCKETS: readonly number[] = [0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1];
