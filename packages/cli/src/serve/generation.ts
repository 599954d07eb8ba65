import type { Logger } from 'pino';
import { createGuard, type NodeGuard } from 'ratecontract/node';
import type { RateContractConfig, RuntimeRoute } from 'ratecontract/config';
import { buildContractGeneration, errorText, type ContractGeneration, type LogThrottle, type NamedLimiter } from '../host/index.js';
import { identifyFrom } from './identify.js';

/** One contract in force for serve: the host's generation and a guard per limited route. */
export interface Generation extends ContractGeneration {
  readonly guards: Map<RuntimeRoute, NodeGuard>;
}

/** Options of `buildGeneration`. */
export interface GenerationOptions {
  readonly log: Logger;
  readonly throttle: LogThrottle;
  /** The generation this one replaces (a reload). */
  readonly previous?: Generation | undefined;
  readonly readyTimeoutMs: number;
}

/** Builds a contract's runtime (waiting, bounded, for its new stores) and its routes' guards. */
export async function buildGeneration(config: RateContractConfig, options: GenerationOptions): Promise<Generation> {
  const { log } = options;
  const gen = await buildContractGeneration(config, options);
  const identify = identifyFrom(config.http);
  const guards = new Map<RuntimeRoute, NodeGuard>();
  try {
    for (const r of gen.runtime.routes) {
      if (r.limiter === undefined) continue;
      guards.set(
        r,
        createGuard(r.limiter, {
          ...gen.runtime.guardOptions,
          ...(identify !== undefined && { identify }),
          onUnexpectedError: (error) => log.error({ event: 'guard-error', route: r.config.match, error: errorText(error) }),
        }),
      );
    }
  } catch (error) {
    await gen.runtime.close();
    throw error;
  }
  return { ...gen, guards };
}

/** The limiters of a generation, named by their routes (for `/metrics` and `/stats.json`). */
export function namedLimiters(gen: Generation): NamedLimiter[] {
  return gen.runtime.routes.flatMap((r) => (r.limiter === undefined ? [] : [{ name: r.config.match, limiter: r.limiter }]));
}
