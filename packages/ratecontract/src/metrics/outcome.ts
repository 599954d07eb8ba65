import type { LimitResult, Outcome } from '../core/types.js';

/**
 * One limit's verdict in a decision, in the words of the decision outcomes,
 * or `undefined` when the limit did not apply (its key was absent):
 * - `fail-open`: admitted by `onError: 'open'` without a store;
 * - `fail-closed`: an enforcing `closed` limit rejected for lack of its store;
 * - `rejected` / `shadow-rejected`: the limit said no (enforced / shadow), whether its store or the local fallback decided;
 * - `degraded`: admitted by the process-local fallback;
 * - `allowed`: admitted by its store.
 */
export function limitOutcome(r: LimitResult): Outcome | undefined {
  if (r.onError === 'open') return 'fail-open';
  if (r.source === 'none') {
    if (r.onError === undefined) return undefined;
    if (!r.allowed) return r.shadow ? 'shadow-rejected' : 'fail-closed';
  }
  if (!r.allowed) return r.shadow ? 'shadow-rejected' : 'rejected';
  return r.source === 'local' ? 'degraded' : 'allowed';
}
