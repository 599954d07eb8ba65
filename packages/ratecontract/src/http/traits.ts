import type { Limiter } from '../core/limiter.js';

/** What a limiter's limits read and hold, worked out once per limiter. */
export interface Traits {
  /** A `body.*` key. */
  readonly body: boolean;
  /** A `header.*` key, a key or cost function (which may read any header), or a cost from `Content-Length`. */
  readonly readsHeaders: boolean;
  /** A `query.*` key or a key function (which may read the query). */
  readonly query: boolean;
  /** A concurrency limit (its decisions hold leases). */
  readonly leases: boolean;
  /** A `count: 'failures'` limit (its decisions are settled when the response finishes). */
  readonly settles: boolean;
}

const traitsOf = new WeakMap<Limiter, Traits>();

export function traits(limiter: Limiter): Traits {
  let t = traitsOf.get(limiter);
  if (t === undefined) {
    const specs = limiter.limits.map((l) => l.keySpec);
    t = {
      body: specs.some((k) => k.startsWith('body.')),
      readsHeaders: specs.some((k) => k.startsWith('header.') || k === 'function') || limiter.limits.some((l) => l.costSpec !== 'static'),
      query: specs.some((k) => k.startsWith('query.') || k === 'function') || limiter.limits.some((l) => l.costSpec === 'function'),
      leases: limiter.limits.some((l) => l.algorithm === 'concurrency'),
      settles: limiter.limits.some((l) => l.count === 'failures'),
    };
    traitsOf.set(limiter, t);
  }
  return t;
}

/** Whether any limit of `limiter` reads a header or runs a key function (which may read any). */
export function usesHeaders(limiter: Limiter): boolean {
  return traits(limiter).readsHeaders;
}

/** Whether any limit of `limiter` reads the query string or runs a key function (which may read it). */
export function usesQuery(limiter: Limiter): boolean {
  return traits(limiter).query;
}

/** Whether any limit of `limiter` is a concurrency limit (its decisions hold leases). */
export function holdsLeases(limiter: Limiter): boolean {
  return traits(limiter).leases;
}

/** Whether any limit of `limiter` has a `body.*` key (so the body must be read before deciding). */
export function usesBody(limiter: Limiter): boolean {
  return traits(limiter).body;
}

