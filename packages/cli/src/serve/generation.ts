import type { Logger } from 'pino';
import type { Limiter } from 'ratecontract';
import { createGuard, type NodeGuard, type NodeGuardOptions } from 'ratecontract/node';
import type { RateContractConfig, RuntimeRoute } from 'ratecontract/config';
import { buildContractGeneration, errorText, type ContractGeneration, type LogThrottle, type NamedLimiter } from '../host/index.js';
import { identifyFrom } from './identify.js';

/** One contract in force for serve (and decide): the host's generation and a guard per limited route. */
export interface Generation<G = NodeGuard> extends ContractGeneration {
  readonly guards: Map<RuntimeRoute, G>;
}

/** Makes a route's guard from its limiter and the contract's adapter options (`http`, `identify`, the error log). */
export type GuardFactory<G> = (limiter: Limiter, options: NodeGuardOptions) => G;

/** Options of `buildGeneration`. */
export interface GenerationOptions {
  readonly log: Logger;
  readonly throttle: LogThrottle;
  /** The generation this one replaces (a reload). */
  readonly previous?: ContractGeneration | undefined;
  readonly readyTimeoutMs: number;
}

/**
 * Builds a contract's runtime (waiting, bounded, for its new stores) and its
 * routes' guards: node:http guards (`createGuard`) for serve, or what `make`
 * builds from the same limiter and options (decide's `HttpGuard`).
 */
export async function buildGeneration(config: RateContractConfig, options: GenerationOptions): Promise<Generation>;
export async function buildGeneration<G>(config: RateContractConfig, options: GenerationOptions, make: GuardFactory<G>): Promise<Generation<G>>;
export async function buildGeneration<G>(config: RateContractConfig, options: GenerationOptions, make?: GuardFactory<G>): Promise<Generation<G | NodeGuard>> {
  const { log } = options;
  const factory: GuardFactory<G | NodeGuard> = make ?? ((limiter, o) => createGuard(limiter, o));
  const gen = await buildContractGeneration(config, options);
  const identify = identifyFrom(config.http);
  const guards = new Map<RuntimeRoute, G | NodeGuard>();
  try {
    for (const r of gen.runtime.routes) {
      if (r.limiter === undefined) continue;
      guards.set(
        r,
        factory(r.limiter, {
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
export function namedLimiters(gen: ContractGeneration): NamedLimiter[] {
  return gen.runtime.routes.flatMap((r) => (r.limiter === undefined ? [] : [{ name: r.config.match, limiter: r.limiter }]));
}
