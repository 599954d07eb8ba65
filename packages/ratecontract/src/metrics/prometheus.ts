import { createRequire } from 'node:module';
import type * as PromClientModule from 'prom-client';
import type { Counter, Gauge, Histogram, Registry, RegistryContentType } from 'prom-client';
import type { Limiter } from '../core/limiter.js';
import { SERIES, SERIES_INFO, STORE_DURATION_BUCKETS, type SeriesName } from './series.js';
import { MetricsTally } from './tally.js';

type PromClient = typeof PromClientModule;

/** Options of `prometheusMetrics`. */
export interface PrometheusMetricsOptions<T extends RegistryContentType = RegistryContentType> {
  /** The prom-client registry to register the series on (yours, or `register`, prom-client's global one). */
  readonly registry: Registry<T>;
  /**
   * The limiters whose stores and replica count the gauges read, and whose
   * limits get their series at 0 before their first decision. Called at
   * each scrape, so it can follow a reload. Without it, the gauges follow
   * the breaker and replicas events, and series appear with their first event.
   */
  readonly limiters?: (() => Iterable<Limiter>) | undefined;
}

/** The Prometheus binding: what `prometheusMetrics` returns. */
export interface PrometheusMetrics<T extends RegistryContentType = RegistryContentType> {
  readonly registry: Registry<T>;
  /** Stops counting and removes the series from the registry (a new binding may then register them again). */
  close(): void;
}

let promClient: PromClient | undefined;
/** prom-client is an optional peer: loaded on first use, so `ratecontract/metrics` imports without it for OpenTelemetry users. */
function loadPromClient(): PromClient {
  promClient ??= createRequire(import.meta.url)('prom-client') as PromClient;
  return promClient;
}

function help(name: SeriesName): string {
  return (SERIES_INFO.find((s) => s.name === name) as { help: string }).help;
}

/**
 * Registers the ratecontract series on `registry` and keeps them current
 * from the core's events (`node:diagnostics_channel`), for every limiter
 * in the process. The cost per decision is a counter bump per limit;
 * series are built at scrape time. Label values are limit and store names
 * and fixed words, never a key.
 */
export function prometheusMetrics<T extends RegistryContentType = RegistryContentType>(options: PrometheusMetricsOptions<T>): PrometheusMetrics<T> {
  const prom = loadPromClient();
  const { registry } = options;
  const registers = [registry as unknown as Registry];
  const created: SeriesName[] = [];
  let histogram: Histogram<'store'> | undefined;
  const tally = new MetricsTally(options.limiters, (store, seconds) => histogram?.observe({ store }, seconds));
  try {
    const decisions: Counter<'limit' | 'outcome'> = new prom.Counter({
      name: SERIES.decisions,
      help: help(SERIES.decisions),
      labelNames: ['limit', 'outcome'],
      registers,
      collect: () => {
        decisions.reset();
        for (const [limit, outcome, n] of tally.decisions()) decisions.inc({ limit, outcome }, n);
      },
    });
    created.push(SERIES.decisions);
    histogram = new prom.Histogram({
      name: SERIES.storeDuration,
      help: help(SERIES.storeDuration),
      labelNames: ['store'],
      buckets: [...STORE_DURATION_BUCKETS],
      registers,
    });
    created.push(SERIES.storeDuration);
    const errors: Counter<'store' | 'kind'> = new prom.Counter({
      name: SERIES.storeErrors,
      help: help(SERIES.storeErrors),
      labelNames: ['store', 'kind'],
      registers,
      collect: () => {
        errors.reset();
        for (const [store, kind, n] of tally.storeErrors()) errors.inc({ store, kind }, n);
      },
    });
    created.push(SERIES.storeErrors);
    const breaker: Gauge<'store'> = new prom.Gauge({
      name: SERIES.breakerOpen,
      help: help(SERIES.breakerOpen),
      labelNames: ['store'],
      registers,
      collect: () => {
        breaker.reset();
        for (const [store, open] of tally.breakerOpen()) breaker.set({ store }, open);
      },
    });
    created.push(SERIES.breakerOpen);
    const fallbacks: Counter<'limit'> = new prom.Counter({
      name: SERIES.fallbackDecisions,
      help: help(SERIES.fallbackDecisions),
      labelNames: ['limit'],
      registers,
      collect: () => {
        fallbacks.reset();
        for (const [limit, n] of tally.fallbacks()) fallbacks.inc({ limit }, n);
      },
    });
    created.push(SERIES.fallbackDecisions);
    const failClosed: Counter<'limit'> = new prom.Counter({
      name: SERIES.failClosed,
      help: help(SERIES.failClosed),
      labelNames: ['limit'],
      registers,
      collect: () => {
        failClosed.reset();
        for (const [limit, n] of tally.failClosed()) failClosed.inc({ limit }, n);
      },
    });
    created.push(SERIES.failClosed);
    const replicas: Gauge = new prom.Gauge({
      name: SERIES.replicas,
      help: help(SERIES.replicas),
      registers,
      collect: () => {
        replicas.reset();
        const k = tally.replicas();
        if (k !== undefined) replicas.set(k);
      },
    });
    // A gauge without labels always shows a value (0 after reset); an unknown k shows none rather than a false 0.
    const get = replicas.get.bind(replicas);
    replicas.get = async () => {
      const metric = await get();
      return tally.replicas() === undefined ? { ...metric, values: [] } : metric;
    };
    created.push(SERIES.replicas);
  } catch (error) {
    // A name already registered (another binding not closed): leave the registry as it was.
    tally.close();
    for (const name of created) registry.removeSingleMetric(name);
    throw error;
  }
  let closed = false;
  return {
    registry,
    close(): void {
      if (closed) return;
      closed = true;
      tally.close();
      for (const name of created) registry.removeSingleMetric(name);
    },
  };
}
