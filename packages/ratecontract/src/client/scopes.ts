import { countsRequests, parsePolicy, parseRateLimit, type QuotaPolicy, type ServiceLimit } from './read-fields.js';

/** Why a request waits before it is sent. */
export type GateReason = 'retry-after' | 'ratelimit';

/** How pacing uses what `RateLimit` said. */
export type Pacing = 'burst' | 'spread' | 'off';

/** What one policy (origin + name + pk) is known to allow. */
interface PolicyState {
  /** Requests that may go out now (the server's `r`, less what was sent since). */
  remaining: number;
  /** When more quota is expected (ms); later waits are spaced by `refillMs`. */
  resetAt: number;
  /** ms per quota unit at the safe rate once `resetAt` has passed. */
  refillMs: number;
  /** Most units ever credited back (the policy's `q`, else unbounded). */
  capacity: number;
  /** Whether the quota is counted in requests (else in bytes: only `r = 0` holds requests). */
  perRequest: boolean;
  /** Requests of this scope sent and not yet answered. */
  inFlight: number;
  /** Earliest next send with `pacing: 'spread'`. */
  nextAt: number;
  /** ms between sends at the safe rate min(r/t, q/w), for `pacing: 'spread'`. */
  intervalMs: number;
  /** Whether `resetAt` came from a `Retry-After`. */
  fromRetryAfter: boolean;
}

/** What one partition of one origin learned: a `Retry-After` it cannot pin on a policy, and the policies it has been told about. */
interface LabelState {
  blockedUntil: number;
  readonly keys: Set<string>;
}

/** A request's hold on the scopes it was paced against. */
export interface Reservation {
  readonly label: string;
  readonly keys: readonly string[];
}

/** The wait the shared state asks of a request, 0 when it may go now. */
export interface Gate {
  readonly waitMs: number;
  readonly reason: GateReason;
}

const MAX_LABELS = 1000;
const MAX_POLICIES = 10_000;

function touch<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > max) {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
}

function policyFor(limit: ServiceLimit, policies: readonly QuotaPolicy[] | undefined): QuotaPolicy | undefined {
  if (policies === undefined) return undefined;
  return policies.find((p) => p.name === limit.name && p.pk === limit.pk) ?? policies.find((p) => p.name === limit.name && p.pk === undefined);
}

/**
 * The safe rate of a limit in units per second: min(r/t, q/w) over what is
 * known. The draft's resource-exhaustion example (`q=10000;w=1000` with
 * `r=10000;t=10`) is why the policy's long-run rate q/w bounds the naive
 * r/t (1000/s there, against the 10/s the quota allows).
 */
export function safeRate(limit: Pick<ServiceLimit, 'r' | 't'>, policy: Pick<QuotaPolicy, 'q' | 'w'> | undefined): number {
  let rate = Infinity;
  if (limit.t !== undefined && limit.t > 0) rate = Math.min(rate, limit.r / limit.t);
  if (policy !== undefined && policy.w !== undefined && policy.w > 0) rate = Math.min(rate, policy.q / policy.w);
  return rate;
}

/**
 * State shared by every request of one client: per origin and partition
 * label (`partition(request)`, default one per origin), the policies the
 * server named, each keyed by origin, policy name and `pk`. Two labels told
 * about the same policy and `pk` share it. Bounded: the least recently used
 * entries are dropped past 1,000 labels or 10,000 policies.
 */
export class Scopes {
  readonly #labels = new Map<string, LabelState>();
  readonly #policies = new Map<string, PolicyState>();
  readonly #pacing: Pacing;

  constructor(pacing: Pacing) {
    this.#pacing = pacing;
  }

  #label(label: string): LabelState {
    let s = this.#labels.get(label);
    if (s === undefined) s = { blockedUntil: -Infinity, keys: new Set() };
    touch(this.#labels, label, s, MAX_LABELS);
    return s;
  }

  /** Credits quota back once `resetAt` has passed: one unit per `refillMs`, never assuming a full restore. */
  #refresh(s: PolicyState, now: number): void {
    if (s.remaining >= 1 || now < s.resetAt) return;
    const k = 1 + Math.floor((now - s.resetAt) / s.refillMs);
    s.remaining = Math.min(s.capacity, s.remaining + k);
    s.resetAt += k * s.refillMs;
    s.fromRetryAfter = false;
  }

  /**
   * The wait before a request of `label` may go out. With 0, the request is
   * counted against every policy of its label (`reservation`), and must hand
   * the reservation back to `learn` or `release`.
   */
  acquire(label: string, now: number): { gate: Gate; reservation: Reservation | undefined } {
    const l = this.#label(label);
    let waitMs = Math.max(0, l.blockedUntil - now);
    let reason: GateReason = 'retry-after';
    const keys: string[] = [];
    for (const key of l.keys) {
      const s = this.#policies.get(key);
      if (s === undefined) {
        l.keys.delete(key);
        continue;
      }
      keys.push(key);
      if (this.#pacing === 'off') continue;
      this.#refresh(s, now);
      let w = s.remaining >= 1 ? 0 : s.resetAt - now;
      if (this.#pacing === 'spread') w = Math.max(w, s.nextAt - now);
      if (w > waitMs) {
        waitMs = w;
        reason = s.fromRetryAfter ? 'retry-after' : 'ratelimit';
      }
    }
    if (waitMs > 0) return { gate: { waitMs, reason }, reservation: undefined };
    for (const key of keys) {
      const s = this.#policies.get(key) as PolicyState;
      if (s.perRequest) s.remaining -= 1;
      s.inFlight += 1;
      s.nextAt = now + s.intervalMs;
    }
    return { gate: { waitMs: 0, reason }, reservation: { label, keys } };
  }

  /** Hands back a reservation whose request got no answer (a network error or an abort). */
  release(r: Reservation | undefined): void {
    if (r === undefined) return;
    for (const key of r.keys) {
      const s = this.#policies.get(key);
      if (s !== undefined && s.inFlight > 0) s.inFlight -= 1;
    }
  }

  /**
   * Learns from an answer to a request of `label`: its `RateLimit` and
   * `RateLimit-Policy` (unless `cached`), and `retryAfterMs` when the answer
   * was a rejection that carried one. A `Retry-After` holds the policies the
   * answer reports exhausted (`r=0`), in place of their `t`; when none is
   * reported it holds the whole label.
   */
  learn(r: Reservation | undefined, label: string, headers: Headers, retryAfterMs: number | undefined, rejected: boolean, cached: boolean, now: number): void {
    this.release(r);
    const l = this.#label(label);
    // With pacing off the fields are not read at all: a Retry-After then holds the whole partition.
    const limits = cached || this.#pacing === 'off' ? undefined : parseRateLimit(headers.get('ratelimit'));
    const policies = limits === undefined ? undefined : parsePolicy(headers.get('ratelimit-policy'));
    let pinned = false;
    if (limits === undefined) {
      // A server may stop sending the fields: do not pace on what it said before.
      if (!rejected && !cached) l.keys.clear();
    } else {
      const origin = label.slice(0, label.indexOf('\n'));
      for (const limit of limits) {
        const policy = policyFor(limit, policies);
        const key = `${origin}\n${limit.name}\n${limit.pk ?? ''}`;
        let s = this.#policies.get(key);
        const fresh = s === undefined;
        if (s === undefined) {
          s = { remaining: 0, resetAt: now, refillMs: 1000, capacity: Infinity, perRequest: true, inFlight: 0, nextAt: now, intervalMs: 0, fromRetryAfter: false };
        }
        touch(this.#policies, key, s, MAX_POLICIES);
        l.keys.add(key);
        s.perRequest = countsRequests(policy);
        const tMs = limit.t === undefined ? undefined : limit.t * 1000;
        // At least one, so a policy that reports q=0 is probed rather than waited on forever.
        s.capacity = Math.max(1, policy?.q ?? Infinity);
        s.refillMs = policy !== undefined && policy.w !== undefined && policy.q > 0 ? (policy.w * 1000) / policy.q : Math.max(1000, tMs ?? 0);
        const rate = safeRate(limit, policy);
        s.intervalMs = rate === Infinity ? 0 : rate > 0 ? 1000 / rate : s.refillMs;
        // The request that taught us this was sent without a reservation: space the next one from it.
        if (fresh) s.nextAt = now + s.intervalMs;
        // Requests sent after the server counted this one are still to be counted.
        s.remaining = s.perRequest ? Math.max(0, limit.r - s.inFlight) : limit.r;
        if (limit.r === 0 && retryAfterMs !== undefined) {
          // Retry-After takes precedence over t.
          s.resetAt = now + retryAfterMs;
          s.fromRetryAfter = true;
          pinned = true;
        } else if (s.remaining < 1) {
          s.resetAt = now + (tMs ?? s.refillMs);
          s.fromRetryAfter = false;
        } else {
          s.resetAt = now + (tMs ?? 0);
          s.fromRetryAfter = false;
        }
      }
    }
    if (retryAfterMs !== undefined && !pinned) l.blockedUntil = Math.max(l.blockedUntil, now + retryAfterMs);
  }
}

/**
 * The wait `RateLimit` asks before a retry, when there is no `Retry-After`:
 * the longest `t` (ms) among the items with nothing remaining, or
 * `undefined` when none is exhausted or the answer was cached.
 */
export function exhaustedResetMs(headers: Headers, cached: boolean): number | undefined {
  if (cached) return undefined;
  const limits = parseRateLimit(headers.get('ratelimit'));
  let out: number | undefined;
  for (const l of limits ?? []) if (l.r === 0 && l.t !== undefined) out = Math.max(out ?? 0, l.t * 1000);
  return out;
}
