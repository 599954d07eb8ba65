/**
 * The composition root of the core: `createLimiter` is core's limiter with
 * the memory store as the default store and as the fail modes' local store.
 * Core itself builds no store (docs/api.md, Layers).
 */
import { buildLimiter, type Limiter, type LimiterOptions } from './core/limiter.js';
import { MemoryStore } from './stores/memory/memory-store.js';

const LOCAL = {
  newStore: () => new MemoryStore(),
  newFallbackStore: (maxKeys: number) => new MemoryStore({ maxKeys }),
};

/**
 * Creates a limiter from a chain of limit definitions. The default store is
 * a new `memoryStore()`. Throws `ConfigError` (with a stable `code` and the
 * option's path) on any invalid or unknown option or definition.
 */
export function createLimiter(options: LimiterOptions): Limiter {
  return buildLimiter(options, LOCAL);
}
