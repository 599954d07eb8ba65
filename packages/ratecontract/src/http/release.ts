import type { Decision } from '../core/types.js';

/**
 * A function that settles the decision (by `status()`, the response's
 * status, or as a failure when there is none) and releases its concurrency leases the first time
 * it is called and does nothing after; adapters call it from every ending
 * (response finished, connection closed, handler error) without counting.
 */
export function releaseOnce(decision: Decision | undefined, status?: () => number | undefined): () => void {
  let done = decision === undefined;
  return () => {
    if (done) return;
    done = true;
    const d = decision as Decision;
    // The response's status settles `count: 'failures'` limits; no status (the client hung up, the handler threw) is a failure.
    const s = status?.();
    d.settle(s === undefined ? 'failure' : { status: s }).catch(() => undefined);
    // release() never rejects (a store failure leaves the lease to expire); the catch is belt and braces.
    d.release().catch(() => undefined);
  };
}
