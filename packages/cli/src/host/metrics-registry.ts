import { Counter, Registry } from 'prom-client';
import type { Limiter } from 'ratecontract';
import { prometheusMetrics } from 'ratecontract/metrics';

/** The series every server has on its admin port, beside the library's. */
export interface HostMetrics {
  /** The registry `/metrics` answers; a front end registers its own series on it. */
  readonly registry: Registry;
  /** A reload taken (`ok`) or refused (`refused`). */
  reloaded(result: 'ok' | 'refused'): void;
  /** A config that could not be loaded or built (a refused reload of a file). */
  loadFailed(): void;
  /** Binds the library's series (`ratecontract/metrics`) to the limiters in force, read at each scrape. Once. */
  bind(limiters: () => Limiter[]): void;
  /** Stops counting (the library's binding). */
  close(): void;
}

/**
 * The admin port's registry: `ratecontract_config_reloads_total{result}`
 * and `ratecontract_config_load_errors_total` for every server, the
 * library's series once `bind` is called, and whatever the front end adds.
 */
export function createHostMetrics(): HostMetrics {
  const registry = new Registry();
  const reloads = new Counter({ name: 'ratecontract_config_reloads_total', help: 'Config reloads by result (ok, refused).', labelNames: ['result'], registers: [registry] });
  const loadErrors = new Counter({ name: 'ratecontract_config_load_errors_total', help: 'Config loads refused (the running config was kept).', registers: [registry] });
  let binding: { close(): void } | undefined;
  return {
    registry,
    reloaded: (result) => reloads.inc({ result }),
    loadFailed: () => loadErrors.inc(),
    bind(limiters) {
      binding ??= prometheusMetrics({ registry, limiters });
    },
    close: () => binding?.close(),
  };
}
