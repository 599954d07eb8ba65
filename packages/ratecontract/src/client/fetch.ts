import { systemClock } from '../core/clock.js';
import { backoffWait, serverWait } from './backoff.js';
import { AdaptiveThrottle, RetryBudget } from './budget.js';
import { RateLimitedError, RetryBudgetExceededError, type GiveUpReason } from './errors.js';
import { clientGiveUpChannel, clientWaitChannel } from './events.js';
import { resolveOptions, type ClientOptions, type FetchLike, type WaitReason } from './options.js';
import { retryAfterMs } from './read-retry-after.js';
import { exhaustedResetMs, Scopes, type Reservation } from './scopes.js';
import { createSleep } from './sleep.js';

/** What `createFetch` returns: a function with the signature of `fetch`. */
export type PoliteFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const MAX_ORIGINS = 1000;

/** Per-origin objects (budgets, throttles), least recently used dropped past `MAX_ORIGINS`. */
function perOrigin<T>(make: () => T): (origin: string) => T {
  const map = new Map<string, T>();
  return (origin) => {
    let v = map.get(origin);
    if (v === undefined) v = make();
    map.delete(origin);
    map.set(origin, v);
    if (map.size > MAX_ORIGINS) map.delete(map.keys().next().value as string);
    return v;
  };
}

/** An answer served from a cache (`Age` other than 0): its `RateLimit` fields describe another moment. */
function fromCache(headers: Headers): boolean {
  const age = headers.get('age');
  return age !== null && age.trim() !== '0';
}

/** A body that cannot be sent twice: a stream, or an async iterable that is not a known buffered type. */
function isStreamBody(body: unknown): boolean {
  if (body === null || body === undefined || typeof body !== 'object') return false;
  if (body instanceof ReadableStream) return true;
  if (body instanceof Blob || body instanceof FormData || body instanceof URLSearchParams || body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return false;
  return Symbol.asyncIterator in body;
}

/**
 * One signal that aborts when any of `signals` does. `AbortSignal.any`
 * (Node >= 20.3) holds its sources weakly, so a long-lived client signal
 * does not collect a listener per call; older Node 20 releases get a
 * listener per call on each source, removed by `release`.
 */
function anySignal(signals: ReadonlyArray<AbortSignal | undefined>): { signal: AbortSignal | undefined; release: () => void } {
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  if (live.length <= 1) return { signal: live[0], release: () => {} };
  const any = (AbortSignal as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (typeof any === 'function') return { signal: any.call(AbortSignal, live), release: () => {} };
  const c = new AbortController();
  const off: Array<() => void> = [];
  for (const s of live) {
    if (s.aborted) {
      c.abort(s.reason);
      break;
    }
    const on = (): void => c.abort(s.reason);
    s.addEventListener('abort', on, { once: true });
    off.push(() => s.removeEventListener('abort', on));
  }
  return { signal: c.signal, release: () => off.forEach((f) => f()) };
}

/** Read through a function, so a check made before an await is not taken as still true after it. */
function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** The abort reason, as fetch would reject with it (an Error unless the caller aborted with something else). */
function reasonOf(signal: AbortSignal | undefined): Error {
  return signal?.reason as Error;
}

async function discard(res: Response): Promise<void> {
  try {
    await res.body?.cancel();
  } catch {
    // Nothing to free.
  }
}

/**
 * A fetch that is polite to rate-limited servers. See docs/client.md.
 *
 * - 429 and 503 (`retryOn`) and network errors are retried, for idempotent
 *   methods (`retryMethods`) or requests with an `Idempotency-Key`, and
 *   bodies that can be sent again;
 * - `Retry-After` is a floor (seconds or HTTP-date, read against the
 *   response's `Date`), and wins over `RateLimit` `t`; a wait above
 *   `maxRetryAfter` gives up at once;
 * - without one, capped exponential backoff with full jitter;
 * - `RateLimit` / `RateLimit-Policy` pace requests before they are rejected,
 *   with state shared by every request of this client per origin, policy
 *   and `pk`;
 * - a retry budget per origin, optional adaptive throttling, abortable
 *   waits, caps on total wait and attempts;
 * - a wait keeps the process alive (it is work the caller awaits) unless
 *   `unref: true`.
 *
 * Throws a `ConfigError` (`RC_INVALID_OPTION`) at once for an unknown option
 * or a bad value, naming it.
 */
export function createFetch(options?: ClientOptions): PoliteFetch {
  const o = resolveOptions(options);
  const clock = o.clock ?? systemClock;
  const sleep = o.sleep ?? createSleep({ unref: o.unref });
  const random = o.random;
  const scopes = new Scopes(o.pacing);
  const budgetParams = o.budget;
  const budgetFor = budgetParams === undefined ? undefined : perOrigin(() => new RetryBudget(budgetParams));
  const throttleParams = o.adaptiveThrottle;
  const throttleFor = throttleParams === undefined ? undefined : perOrigin(() => new AdaptiveThrottle(throttleParams));

  return async function politeFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const base: FetchLike = o.fetch ?? globalThis.fetch;
    const template = input instanceof Request ? (init === undefined ? input : new Request(input, init)) : undefined;
    let href: string;
    let origin: string;
    try {
      href = template !== undefined ? template.url : input instanceof URL ? input.href : new URL(input).href;
      origin = new URL(href).origin;
    } catch {
      // Not an absolute URL: fetch decides what that means (it rejects in Node).
      return base(input, init);
    }
    const method = (template?.method ?? init?.method ?? 'GET').toUpperCase();
    const headers = new Headers(template?.headers ?? init?.headers);
    // A Request is cloned for each attempt (its body teed); a stream in init.body can be read only once.
    const resendable = template !== undefined ? !template.bodyUsed : !isStreamBody(init?.body);
    const retryable = resendable && (o.retryMethods.has(method) || headers.has('idempotency-key'));
    const userSignal = init?.signal ?? template?.signal ?? undefined;
    const combined = anySignal([userSignal ?? undefined, o.signal]);
    const signal = combined.signal;
    const label = `${origin}\n${o.partition === undefined ? '' : o.partition(template ?? new Request(href, { method, headers }))}`;
    const budget = budgetFor?.(origin);
    const throttle = throttleFor?.(origin);

    let attempts = 0;
    let retries = 0;
    let waited = 0;
    let previous = o.backoff.base;
    let lastResponse: Response | undefined;
    let asked: number | undefined;

    const giveUp = (reason: GiveUpReason, cause?: unknown): RateLimitedError => {
      const details = { reason, response: lastResponse, attempts, retryAfterMs: asked, ...(cause === undefined ? {} : { cause }) };
      const what = lastResponse === undefined ? `${method} ${href}` : `${method} ${href} (${lastResponse.status})`;
      const why: Record<GiveUpReason, string> = {
        attempts: `gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}`,
        'max-retry-after': `the server asked for a wait of ${String(asked)} ms, above maxRetryAfter (${o.maxRetryAfter} ms)`,
        'max-wait': `the next wait would pass maxWait (${o.maxWait} ms; ${waited} ms waited)`,
        budget: 'the retry budget of this origin is spent',
        throttled: 'adaptive throttling refused the attempt locally',
      };
      const message = `${what}: ${why[reason]}`;
      const error = reason === 'budget' || reason === 'throttled' ? new RetryBudgetExceededError(message, details) : new RateLimitedError(message, details);
      if (clientGiveUpChannel.hasSubscribers) clientGiveUpChannel.publish({ url: href, method, error });
      return error;
    };

    const wait = async (ms: number, reason: WaitReason, response: Response | undefined): Promise<void> => {
      const attempt = attempts + 1;
      o.onWait?.({ attempt, waitMs: ms, reason, response, url: href });
      if (clientWaitChannel.hasSubscribers) clientWaitChannel.publish({ url: href, method, attempt, waitMs: ms, reason, status: response?.status });
      if (aborted(signal)) throw reasonOf(signal);
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(reasonOf(signal));
        signal?.addEventListener('abort', onAbort, { once: true });
        const done = (): void => signal?.removeEventListener('abort', onAbort);
        sleep(ms, signal).then(
          () => {
            done();
            resolve();
          },
          (e: unknown) => {
            done();
            reject(e instanceof Error ? e : new Error(String(e)));
          },
        );
      });
      waited += ms;
    };

    const send = (): Promise<Response> => {
      if (template !== undefined) {
        // Sent once: no copy needed (and a used body makes fetch reject, as it would unwrapped).
        const copy = retryable ? template.clone() : template;
        return signal === userSignal ? base(copy) : base(copy, { signal: signal ?? null });
      }
      return signal === userSignal ? base(input, init) : base(input, { ...init, signal: signal ?? null });
    };

    try {
      for (;;) {
        // Pacing: what this client learned about the scope, before spending a request on it.
        let reservation: Reservation | undefined;
        for (;;) {
          if (aborted(signal)) throw reasonOf(signal);
          const got = scopes.acquire(label, clock.now());
          if (got.reservation !== undefined) {
            reservation = got.reservation;
            break;
          }
          const gate = Math.ceil(got.gate.waitMs);
          if (gate > o.maxRetryAfter) {
            asked = gate;
            throw giveUp('max-retry-after');
          }
          // A Retry-After hold gets the same spread as after a rejection, so the requests it held do not
          // all come back at one instant. Waits for quota are exact: quota comes back one unit at a time.
          const ms = got.gate.reason === 'retry-after' ? serverWait(o.backoff, gate, random) : gate;
          if (waited + ms > o.maxWait) throw giveUp('max-wait');
          await wait(ms, got.gate.reason, undefined);
        }

        if (throttle !== undefined && !throttle.admit(clock.now(), random)) {
          scopes.release(reservation);
          throw giveUp('throttled');
        }
        if (attempts === 0) budget?.request(clock.now());
        attempts += 1;

        let res: Response;
        try {
          res = await send();
        } catch (error) {
          scopes.release(reservation);
          if (aborted(signal)) throw reasonOf(signal);
          // fetch rejects with a TypeError for a network error; anything else is not ours to retry.
          if (!(error instanceof TypeError) || !retryable || !o.retryNetworkErrors || attempts >= o.maxAttempts) throw error;
          const ms = backoffWait(o.backoff, retries, previous, random);
          if (waited + ms > o.maxWait) throw error;
          if (budget !== undefined && !budget.tryRetry(clock.now())) throw giveUp('budget', error);
          previous = ms;
          await wait(ms, 'backoff', undefined);
          retries += 1;
          continue;
        }

        const now = clock.now();
        const cached = fromCache(res.headers);
        const rejected = o.retryOn.has(res.status);
        const ra = rejected ? retryAfterMs(res.headers.get('retry-after'), res.headers.get('date'), now) : undefined;
        scopes.learn(reservation, label, res.headers, ra, rejected, cached, now);
        if (!rejected) {
          throttle?.accept(now);
          return res;
        }
        // Not safe to send again: the caller gets the answer, as from fetch.
        if (!retryable) return res;

        lastResponse = res;
        const reset = ra === undefined && o.pacing !== 'off' ? exhaustedResetMs(res.headers, cached) : undefined;
        asked = ra ?? reset;
        if (asked !== undefined && asked > o.maxRetryAfter) throw giveUp('max-retry-after');
        if (attempts >= o.maxAttempts) throw giveUp('attempts');
        let ms: number;
        if (asked !== undefined) {
          ms = serverWait(o.backoff, asked, random);
        } else {
          ms = backoffWait(o.backoff, retries, previous, random);
          previous = ms;
        }
        if (waited + ms > o.maxWait) throw giveUp('max-wait');
        if (budget !== undefined && !budget.tryRetry(now)) throw giveUp('budget');
        await discard(res);
        await wait(ms, ra !== undefined ? 'retry-after' : reset !== undefined ? 'ratelimit' : 'backoff', res);
        retries += 1;
      }
    } finally {
      combined.release();
    }
  };
}
