export { prometheusMetrics, type PrometheusMetrics, type PrometheusMetricsOptions } from './prometheus.js';
export { openTelemetryMetrics, type OpenTelemetryMetrics, type OpenTelemetryMetricsOptions } from './opentelemetry.js';
export { SERIES, SERIES_INFO, OUTCOMES, STORE_ERROR_KINDS, STORE_DURATION_BUCKETS, type SeriesName, type SeriesInfo } from './series.js';
export { limitOutcome } from './outcome.js';
export { mergedStoreHealth } from './health.js';
export { MAX_LABEL_VALUES, OTHER_LABEL } from './tally.js';
