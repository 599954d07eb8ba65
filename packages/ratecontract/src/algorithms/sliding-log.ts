import { ceilDiv, intoFigures, type Algorithm } from './types.js';

/**
 * State of a sliding log: a flat array `[t0, c0, t1, c1, ...]` of admission
 * times (ascending) and the cost admitted at each. Its total cost never
 * exceeds N, so its length is bounded by 2N.
 */
export type SlidingLogState = readonly number[];

/**
 * Sliding log: remembers every admission and counts the cost in the trailing
 * window `(now - W, now]`.
 *
 * Bound: at most **N in every (T - W, T]**, exactly, with no boundary burst.
 * Pros: exact and smooth; `retryAfterMs` is the moment enough old entries
 * expire. Cons: memory and work proportional to N per key; fine for low,
 * high-value limits (logins, OTP), wasteful for large N.
 */
export const slidingLog: Algorithm<SlidingLogState> = {
  name: 'sliding-log',
  usesBurst: false,
  decide(s, now, cost, p) {
    const W = p.windowMs;
    const N = p.limit;
    const cutoff = now - W;
    let start = 0;
    let used = 0;
    if (s !== undefined) {
      while (start < s.length && (s[start] ?? 0) <= cutoff) start += 2;
      for (let i = start + 1; i < s.length; i += 2) used += s[i] ?? 0;
    }
    const live = s === undefined || start >= s.length ? undefined : start === 0 ? s : s.slice(start);
    if (used + cost <= N) {
      let next = live;
      if (cost > 0) {
        const copy = live === undefined ? [] : live.slice();
        const last = copy.length - 2;
        if (last >= 0 && copy[last] === now) copy[last + 1] = (copy[last + 1] ?? 0) + cost;
        else copy.push(now, cost);
        next = copy;
      }
      return {
        allowed: true,
        state: next,
        remaining: N - used - cost,
        resetMs: next === undefined ? 0 : (next[next.length - 2] ?? now) + W - now,
        retryAfterMs: 0,
        delayMs: 0,
      };
    }
    let retryAfterMs = Infinity;
    if (cost <= N && live !== undefined) {
      // Oldest entries leave the window first; find when enough has left.
      const need = used + cost - N;
      let freed = 0;
      for (let i = 0; i < live.length; i += 2) {
        freed += live[i + 1] ?? 0;
        if (freed >= need) {
          retryAfterMs = (live[i] ?? now) + W - now;
          break;
        }
      }
    }
    return {
      allowed: false,
      state: live,
      remaining: N - used,
      resetMs: live === undefined ? 0 : (live[live.length - 2] ?? now) + W - now,
      retryAfterMs,
      delayMs: 0,
    };
  },
  decideInto(s, now, cost, p, out, _into, leaseId) {
    // Immutable state: the decision is `decide`'s, figures copied out.
    return intoFigures(this.decide(s, now, cost, p, leaseId), out);
  },
  refund(s, now, cost) {
    const copy = s.slice();
    for (let i = copy.length - 2; i >= 0; i -= 2) {
      if (copy[i] === now) {
        const left = (copy[i + 1] ?? 0) - cost;
        if (left > 0) copy[i + 1] = left;
        else copy.splice(i, 2);
        break;
      }
    }
    return copy.length > 0 ? copy : undefined;
  },
  expiresAt(s, p) {
    return (s[s.length - 2] ?? 0) + p.windowMs;
  },
  bound(p, t) {
    if (t <= 0) return 0;
    return p.limit * ceilDiv(t, p.windowMs);
  },
  capacity(p) {
    return p.limit;
  },
};
