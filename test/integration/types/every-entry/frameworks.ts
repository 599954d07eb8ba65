/**
 * The Express and Fastify adapters and the metrics bindings, as a Node
 * consumer of those frameworks imports them under a default `tsc --init`
 * configuration (test/types/packed.test.ts, TypeScript 5 and 7).
 */
import { createLimiter } from 'ratecontract';
import { rateLimit } from 'ratecontract/express';
import { rateLimitPlugin } from 'ratecontract/fastify';
import { openTelemetryMetrics, prometheusMetrics, SERIES } from 'ratecontract/metrics';

type IsAny<T> = 0 extends 1 & T ? true : false;
function notAny<T>(value: T, proof: IsAny<T> extends false ? true : never): void {
  void value;
  void proof;
}

const limiter = createLimiter({ limits: [{ name: 'per-ip', purpose: 'abuse', limit: 5, window: '1m', key: 'ip' }] });
notAny(rateLimit(limiter), true);
notAny(rateLimitPlugin, true);
notAny(prometheusMetrics, true);
notAny(openTelemetryMetrics, true);
notAny(SERIES, true);
export { limiter };
