/**
 * The composition root of the core: `createLimiter` is core's limiter with
 * the memory store as the default store and as the fail modes' local store.
 * Core itself builds no store (docs/api.md, Layers).
 */
import { buildLimiter, type Limiter, type LimiterOptions } from './core/limiter.js';
import type { RequestContext } from './core/types.js';
import { MemoryStore } from './stores/memory/memory-store.js';

const LOCAL = {
  newStore: () => new MemoryStore(),
  newFallbackStore: (maxKeys: number) => new MemoryStore({ maxKeys }),
};

/**
 * Creates a limiter from a chain of limit definitions. The default store is
 * a new `memoryStore()`. `Ctx` is your request context type: key and cost
 * functions and `check()` take it (default `RequestContext`), for example
 * `createLimiter<{ account: string; ip?: string }>({ ... })`. Throws `ConfigError` (with a stable `code` and the
 * option's path) on any invalid or unknown option or definition.
 */
export function createLimiter<Ctx extends object = RequestContext>(options: LimiterOptions<Ctx>): Limiter<Ctx> {
  return buildLimiter(options, LOCAL);
}
