import { channel } from 'node:diagnostics_channel';

/**
 * Channel names on `node:diagnostics_channel`. Publishing costs nothing when
 * nobody subscribes. Payloads are documented in docs/events.md.
 */
export const CHANNELS = {
  /** Every decision: `{ decision, now }`. */
  decision: 'ratecontract:decision',
  /** A store could not answer (reason: error, timeout, breaker-open, busy): `{ store, kind, reason, error, limits }`. */
  storeError: 'ratecontract:store-error',
  /** A limit was decided by its fail mode: `{ limit, onError, store }`. */
  fallback: 'ratecontract:fallback',
  /** A `closed` limit rejected for lack of a store: `{ limit, store }`. */
  failClosed: 'ratecontract:fail-closed',
  /** A key extractor threw: `{ limit, error }`. The request is counted under a shared key. */
  keyError: 'ratecontract:key-error',
  /** A store call missed its deadline: `{ store, deadlineMs, limits }`. Also reported on store-error. */
  timeout: 'ratecontract:timeout',
  /** A store's circuit breaker changed state: `{ store, kind, from, to, now, failureRate, calls }`. */
  breaker: 'ratecontract:breaker',
  /** The replica count used by degraded limits changed: `{ replicas, source }`. */
  replicas: 'ratecontract:replicas',
  /** A store call that was made finished (answered, failed or missed its deadline): `{ store, kind, durationMs, ok }`. */
  storeCall: 'ratecontract:store-call',
} as const;

export const decisionChannel = channel(CHANNELS.decision);
export const storeErrorChannel = channel(CHANNELS.storeError);
export const fallbackChannel = channel(CHANNELS.fallback);
export const failClosedChannel = channel(CHANNELS.failClosed);
export const keyErrorChannel = channel(CHANNELS.keyError);
export const timeoutChannel = channel(CHANNELS.timeout);
export const breakerChannel = channel(CHANNELS.breaker);
export const replicasChannel = channel(CHANNELS.replicas);
export const storeCallChannel = channel(CHANNELS.storeCall);
