import { failClosedChannel, fallbackChannel } from './events.js';
import type { StoreOp, StoreOpResult, SyncStore } from './store.js';
import type { CompiledLimit, OnError } from './types.js';

/** Which limits of a chain were decided by their fail mode, and how. */
export interface FailModeOutcome {
  readonly failModes: ReadonlyArray<OnError | undefined>;
  readonly local: readonly boolean[];
  /** Whether an enforcing `closed` limit rejected for lack of a store (503). */
  readonly failClosed: boolean;
}

/**
 * The process-local side of the fail-mode clause: a private memory store and
 * the local stand-in of each limit (N for `closed`, ceil(N/k) for `degraded`).
 */
export class LocalFallback {
  /** The process-local store the fail modes decide on (bounded: see `LimiterOptions.fallbackMaxKeys`). */
  readonly store: SyncStore;
  /** k, the replica count `degraded` limits divide by. */
  replicas: number;
  readonly #limits = new Map<string, CompiledLimit>();
  readonly #failClosedRetryAfterMs: number;

  constructor(store: SyncStore, replicas: number, failClosedRetryAfterMs: number) {
    this.store = store;
    this.replicas = replicas;
    this.#failClosedRetryAfterMs = failClosedRetryAfterMs;
  }

  /** The process-local stand-in for `limit` while its store is failing. */
  limitFor(limit: CompiledLimit): CompiledLimit {
    let local = this.#limits.get(limit.name);
    const k = limit.onError === 'degraded' ? this.replicas : 1;
    const target = Math.ceil(limit.params.limit / k);
    if (local === undefined || local.params.limit !== target) {
      const burst = Math.max(Math.ceil(limit.params.burst / k), limit.cost);
      local = { ...limit, params: { ...limit.params, limit: target, burst }, id: `${limit.id}:local:${k}` };
      this.#limits.set(limit.name, local);
    }
    return local;
  }

  /**
   * Applies each failed limit's onError, writing its result into `results`.
   * `failingSince(limit)` is when the limit's store started failing.
   */
  apply(
    ops: ReadonlyArray<StoreOp | undefined>,
    results: Array<StoreOpResult | undefined>,
    failed: readonly boolean[],
    now: number,
    failingSince: (limit: CompiledLimit) => number | undefined,
  ): FailModeOutcome {
    const n = ops.length;
    const failModes = new Array<OnError | undefined>(n);
    const local = new Array<boolean>(n).fill(false);
    let failClosed = false;
    const localOps: StoreOp[] = [];
    const localIdx: number[] = [];
    for (let i = 0; i < n; i++) {
      if (failed[i] !== true) continue;
      const op = ops[i] as StoreOp;
      const limit = op.spec;
      failModes[i] = limit.onError;
      if (fallbackChannel.hasSubscribers) fallbackChannel.publish({ limitName: limit.name, onError: limit.onError, store: limit.storeName ?? '(default)' });
      if (limit.onError === 'open') {
        results[i] = undefined;
        continue;
      }
      if (limit.onError === 'closed') {
        const since = failingSince(limit);
        if (since !== undefined && now - since >= limit.failClosedAfterMs) {
          const wait = this.#failClosedRetryAfterMs;
          results[i] = { allowed: false, consumed: false, remaining: 0, resetMs: wait, retryAfterMs: wait, delayMs: 0 };
          if (!limit.shadow) failClosed = true;
          if (failClosedChannel.hasSubscribers) failClosedChannel.publish({ limitName: limit.name, store: limit.storeName ?? '(default)' });
          continue;
        }
      }
      localOps.push({ ...op, spec: this.limitFor(limit) });
      localIdx.push(i);
    }
    if (localOps.length > 0) {
      const res = this.store.evaluateSync(localOps, now);
      localIdx.forEach((i, j) => {
        results[i] = res[j];
        local[i] = true;
      });
    }
    return { failModes, local, failClosed };
  }
}
