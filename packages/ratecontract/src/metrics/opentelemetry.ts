import type { BatchObservableCallback, Meter, Observable } from '@opentelemetry/api';
import type { Limiter } from '../core/limiter.js';
import { SERIES, SERIES_INFO, STORE_DURATION_BUCKETS, type SeriesName } from './series.js';
import { MetricsTally } from './tally.js';

/** Options of `openTelemetryMetrics`. */
export interface OpenTelemetryMetricsOptions {
  /** The meter to create the instruments on (`metrics.getMeter('ratecontract')`). */
  readonly meter: Meter;
  /** As for `prometheusMetrics`: the limiters the gauges read and whose limits start at 0; called at each collection. */
  readonly limiters?: (() => Iterable<Limiter>) | undefined;
}

/** The OpenTelemetry binding: what `openTelemetryMetrics` returns. */
export interface OpenTelemetryMetrics {
  /** Stops counting and observing (instruments stay on the meter, as the API cannot remove them; they report nothing new). */
  close(): void;
}

function description(name: SeriesName): string {
  return (SERIES_INFO.find((s) => s.name === name) as { help: string }).help;
}

/**
 * The same series as `prometheusMetrics`, as OpenTelemetry instruments of
 * the same names: cumulative counts as observable counters, breaker state
 * and replicas as observable gauges, store call durations as a histogram
 * in seconds with the same bucket advice. Only `@opentelemetry/api` types
 * are used: the application brings the SDK and its exporter. Through the
 * Prometheus exporter the names come out unchanged.
 */
export function openTelemetryMetrics(options: OpenTelemetryMetricsOptions): OpenTelemetryMetrics {
  const { meter } = options;
  const histogram = meter.createHistogram(SERIES.storeDuration, {
    description: description(SERIES.storeDuration),
    unit: 's',
    advice: { explicitBucketBoundaries: [...STORE_DURATION_BUCKETS] },
  });
  const tally = new MetricsTally(options.limiters, (store, seconds) => histogram.record(seconds, { store }));
  const decisions = meter.createObservableCounter(SERIES.decisions, { description: description(SERIES.decisions) });
  const errors = meter.createObservableCounter(SERIES.storeErrors, { description: description(SERIES.storeErrors) });
  const fallbacks = meter.createObservableCounter(SERIES.fallbackDecisions, { description: description(SERIES.fallbackDecisions) });
  const failClosed = meter.createObservableCounter(SERIES.failClosed, { description: description(SERIES.failClosed) });
  const breaker = meter.createObservableGauge(SERIES.breakerOpen, { description: description(SERIES.breakerOpen) });
  const replicas = meter.createObservableGauge(SERIES.replicas, { description: description(SERIES.replicas) });
  const observables: Observable[] = [decisions, errors, fallbacks, failClosed, breaker, replicas];
  const observe: BatchObservableCallback = (result) => {
    for (const [limit, outcome, n] of tally.decisions()) result.observe(decisions, n, { limit, outcome });
    for (const [store, kind, n] of tally.storeErrors()) result.observe(errors, n, { store, kind });
    for (const [limit, n] of tally.fallbacks()) result.observe(fallbacks, n, { limit });
    for (const [limit, n] of tally.failClosed()) result.observe(failClosed, n, { limit });
    for (const [store, open] of tally.breakerOpen()) result.observe(breaker, open, { store });
    const k = tally.replicas();
    if (k !== undefined) result.observe(replicas, k);
  };
  meter.addBatchObservableCallback(observe, observables);
  let closed = false;
  return {
    close(): void {
      if (closed) return;
      closed = true;
      tally.close();
      meter.removeBatchObservableCallback(observe, observables);
    },
  };
}
