import type { Logger } from 'pino';
import { buildRuntime, type ContractRuntime, type RateContractConfig } from 'ratecontract/config';
import { redactUrl } from './http.js';
import type { LogThrottle } from './log-throttle.js';
import { logConnectionError } from './store-log.js';
import { waitForStores } from './store-readiness.js';

/** A contract file's runtime in force, with its stores' readiness (what `/readyz` reads). */
export interface ContractGeneration {
  readonly config: RateContractConfig;
  readonly runtime: ContractRuntime;
  readonly ready: ReadonlyMap<string, boolean>;
}

/** Options of `buildContractGeneration`. */
export interface ContractGenerationOptions {
  readonly log: Logger;
  readonly throttle: LogThrottle;
  /** The generation this one replaces (a reload): its unchanged stores are taken over with their state, and not logged again. */
  readonly previous?: ContractGeneration | undefined;
  /** Bound on the wait for each new store to be ready. */
  readonly readyTimeoutMs: number;
}

/**
 * What every front end on a contract file (serve, decide) builds at startup
 * and on each reload: the contract's stores and limiters, then a bounded
 * wait for its new stores with one `store` line each, and Redis connection
 * errors as throttled `store-connection-error` lines.
 */
export async function buildContractGeneration(config: RateContractConfig, options: ContractGenerationOptions): Promise<ContractGeneration> {
  const { log, throttle } = options;
  const previous = options.previous?.runtime;
  const runtime = await buildRuntime(config, { onRedisError: (store, error) => logConnectionError(log, throttle, store, error), previous });
  const ready = await waitForStores(
    [...runtime.stores].map(([name, store]) => {
      const def = config.stores[name];
      return { name, store, url: def?.type === 'redis' ? redactUrl(def.url) : undefined, log: previous?.stores.get(name) !== store };
    }),
    options.readyTimeoutMs,
    log,
  );
  return { config, runtime, ready };
}

/** The stores a reload kept from `previous` (by name). */
export function keptStores(next: ContractGeneration, previous: ContractGeneration): string[] {
  return [...next.runtime.stores].filter(([name, s]) => previous.runtime.stores.get(name) === s).map(([name]) => name);
}
