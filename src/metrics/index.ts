// stand-in: replaced by feat/metrics
import { Gauge, type Registry } from 'prom-client';
import type { Limiter } from '../index.js';

/** Options of `prometheusMetrics`. */
export interface PrometheusMetricsOptions {
  readonly registry: Registry;
  /** The limiters whose store health feeds the breaker and replica gauges. */
  readonly limiters?: (() => Iterable<Limiter>) | undefined;
}

/** The core's events as Prometheus series on `registry` (stand-in: the replica gauge only). */
export function prometheusMetrics(options: PrometheusMetricsOptions): { readonly registry: Registry; close(): void } {
  const { registry, limiters } = options;
  new Gauge({
    name: 'ratecontract_replicas',
    help: 'The replica count k that degraded limits divide by.',
    registers: [registry],
    collect(): void {
      let k = 1;
      for (const l of limiters?.() ?? []) k = Math.max(k, l.replicas);
      this.set(k);
    },
  });
  return {
    registry,
    close: () => registry.removeSingleMetric('ratecontract_replicas'),
  };
}
