import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Logger } from 'pino';
import { CHANNELS } from 'ratecontract';
import { errorText } from './http.js';
import type { LogThrottle } from './log-throttle.js';

interface StoreErrorMessage {
  readonly store: string;
  readonly kind: string;
  readonly reason: string;
  readonly error: unknown;
  readonly limits: readonly string[];
}

interface BreakerMessage {
  readonly store: string;
  readonly kind: string;
  readonly from: string;
  readonly to: string;
  readonly failureRate: number;
  readonly calls: number;
}

/**
 * Logs the core's store events for every server: `store-error` (throttled
 * per store and reason, with `suppressedSinceLast`) and `breaker` (each
 * move of a store's breaker). Returns the unsubscribe.
 */
export function logStoreEvents(log: Logger, throttle: LogThrottle): () => void {
  const onStoreError = (message: unknown): void => {
    const m = message as StoreErrorMessage;
    throttle.take(`store-error:${m.store}:${m.reason}`, (suppressed) =>
      log.warn({
        event: 'store-error',
        store: m.store,
        kind: m.kind,
        reason: m.reason,
        limits: m.limits,
        error: m.error instanceof Error ? m.error.message : m.error === undefined ? undefined : JSON.stringify(m.error),
        ...(suppressed > 0 && { suppressedSinceLast: suppressed }),
      }),
    );
  };
  const onBreaker = (message: unknown): void => {
    const m = message as BreakerMessage;
    log.warn({ event: 'breaker', store: m.store, kind: m.kind, from: m.from, to: m.to, failureRate: m.failureRate, calls: m.calls });
  };
  subscribe(CHANNELS.storeError, onStoreError);
  subscribe(CHANNELS.breaker, onBreaker);
  return () => {
    unsubscribe(CHANNELS.storeError, onStoreError);
    unsubscribe(CHANNELS.breaker, onBreaker);
  };
}

/** The `store-connection-error` line of a Redis client's error event, throttled per store as the store errors are. */
export function logConnectionError(log: Logger, throttle: LogThrottle, store: string, error: unknown): void {
  throttle.take(`redis:${store}`, (suppressed) =>
    log.warn({ event: 'store-connection-error', store, error: errorText(error), ...(suppressed > 0 && { suppressedSinceLast: suppressed }) }),
  );
}
