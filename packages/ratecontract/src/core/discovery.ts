import { randomBytes } from 'node:crypto';
import type { Clock } from './clock.js';
import { ConfigError } from './errors.js';
import { replicasChannel, storeErrorChannel } from './events.js';
import { failureReason } from './store-circuit.js';
import type { Store } from './store.js';
import { unrefTimer } from './timers.js';

/** Where discovery keeps the replica count k. */
export interface ReplicaCount {
  get(): number;
  set(count: number): void;
}

/**
 * Replica discovery (`replicas: 'discover'`): a heartbeat in `store` every
 * `periodMs` (an instance counts for 3 periods) that sets k to the number of
 * live instances. During an outage the last-known count is kept. Returns the
 * (unref'd) timer; clear it to stop.
 */
export function startDiscovery(store: Store, periodMs: number, clock: Clock, k: ReplicaCount): NodeJS.Timeout {
  if (typeof store.heartbeat !== 'function') {
    throw new ConfigError('RC_INVALID_OPTION', 'replicas', `'discover' needs a default store with heartbeat(); ${store.kind} has none: pass a number`);
  }
  if (!Number.isSafeInteger(periodMs) || periodMs < 10) throw new ConfigError('RC_INVALID_OPTION', 'heartbeatMs', `must be an integer >= 10, got ${String(periodMs)}`);
  const heartbeat = store.heartbeat.bind(store);
  const id = randomBytes(9).toString('base64url');
  const beat = async (): Promise<void> => {
    try {
      const count = await heartbeat(id, periodMs * 3, clock.now());
      if (Number.isSafeInteger(count) && count >= 1 && count !== k.get()) {
        k.set(count);
        if (replicasChannel.hasSubscribers) replicasChannel.publish({ replicas: count, source: 'heartbeat' });
      }
    } catch (error) {
      // Keep the last-known count during an outage.
      if (storeErrorChannel.hasSubscribers) storeErrorChannel.publish({ store: '(default)', kind: store.kind, reason: failureReason(error), error, limits: [] });
    }
  };
  void beat();
  const timer = setInterval(() => void beat(), periodMs);
  unrefTimer(timer);
  return timer;
}
