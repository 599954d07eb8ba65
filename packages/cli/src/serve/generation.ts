import type { Logger } from 'pino';
import { createGuard, type NodeGuard } from 'ratecontract/node';
import { buildRuntime, type ContractRuntime, type RateContractConfig, type RuntimeRoute } from 'ratecontract/config';
import { errorText, redactUrl, waitForStores, type NamedLimiter } from '../host/index.js';
import { identifyFrom } from './identify.js';

/** One contract in force: its runtime, a guard per limited route, and its stores' readiness. */
export interface Generation {
  readonly config: RateContractConfig;
  readonly runtime: ContractRuntime;
  readonly guards: Map<RuntimeRoute, NodeGuard>;
  readonly ready: ReadonlyMap<string, boolean>;
}

/** Options of `buildGeneration`. */
export interface GenerationOptions {
  readonly log: Logger;
  /** The generation this one replaces (a reload): its unchanged stores are taken over, and not logged again. */
  readonly previous?: Generation | undefined;
  /** Bound on the wait for each new store to be ready. */
  readonly readyTimeoutMs: number;
  readonly onRedisError: (store: string, error: unknown) => void;
}

/** Builds a contract's stores, limiters and guards, and waits (bounded) for its new stores, one `store` line each. */
export async function buildGeneration(config: RateContractConfig, options: GenerationOptions): Promise<Generation> {
  const { log } = options;
  const previous = options.previous?.runtime;
  const runtime = await buildRuntime(config, { onRedisError: options.onRedisError, previous });
  const identify = identifyFrom(config.http);
  const guards = new Map<RuntimeRoute, NodeGuard>();
  try {
    for (const r of runtime.routes) {
      if (r.limiter === undefined) continue;
      guards.set(
        r,
        createGuard(r.limiter, {
          ...runtime.guardOptions,
          ...(identify !== undefined && { identify }),
          onUnexpectedError: (error) => log.error({ event: 'guard-error', route: r.config.match, error: errorText(error) }),
        }),
      );
    }
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const ready = await waitForStores(
    [...runtime.stores].map(([name, store]) => {
      const def = config.stores[name];
      return { name, store, url: def?.type === 'redis' ? redactUrl(def.url) : undefined, log: previous?.stores.get(name) !== store };
    }),
    options.readyTimeoutMs,
    log,
  );
  return { config, runtime, guards, ready };
}

/** The limiters of a generation, named by their routes (for `/metrics` and `/stats.json`). */
export function namedLimiters(gen: Generation): NamedLimiter[] {
  return gen.runtime.routes.flatMap((r) => (r.limiter === undefined ? [] : [{ name: r.config.match, limiter: r.limiter }]));
}
