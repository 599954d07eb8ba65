import type { Decision } from '../core/types.js';

/**
 * A function that releases the decision's concurrency leases the first time
 * it is called and does nothing after; adapters call it from every ending
 * (response finished, connection closed, handler error) without counting.
 */
export function releaseOnce(decision: Decision | undefined): () => void {
  let done = decision === undefined;
  return () => {
    if (done) return;
    done = true;
    // release() never rejects (a store failure leaves the lease to expire); the catch is belt and braces.
    (decision as Decision).release().catch(() => undefined);
  };
}
