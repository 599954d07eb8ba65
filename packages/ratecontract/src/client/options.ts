import type { Clock } from '../core/clock.js';
import { parseDuration, type Duration } from '../core/duration.js';
import { ConfigError } from '../core/errors.js';
import { closest } from '../core/suggest.js';
import type { Backoff, Jitter } from './backoff.js';
import type { BudgetParams, ThrottleParams } from './budget.js';
import type { Pacing } from './scopes.js';

/** A function with the signature of `fetch`. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Why the client waits. */
export type WaitReason =
  /** A `Retry-After` (this request's, or one shared by its scope). */
  | 'retry-after'
  /** `RateLimit` said the quota is spent until `t` (or, with `pacing: 'spread'`, to keep to the safe rate). */
  | 'ratelimit'
  /** No server wait: capped exponential backoff with jitter. */
  | 'backoff';

/** What `onWait` is told before each wait. */
export interface WaitInfo {
  /** The attempt the wait comes before (1 is the first send, which pacing may delay). */
  readonly attempt: number;
  /** How long the client is about to wait, in ms. */
  readonly waitMs: number;
  readonly reason: WaitReason;
  /** The response that caused the wait, if this request got one (its body is already discarded). */
  readonly response: Response | undefined;
  /** The request's URL. */
  readonly url: string;
}

/** Backoff when the server names no wait. */
export interface BackoffOptions {
  /** First ceiling. Default `100` ms. */
  readonly base?: Duration;
  /** Largest ceiling. Default `20000` ms (20 s). */
  readonly cap?: Duration;
  /** How a wait is drawn below the ceiling min(cap, base * 2^retry). Default `'full'`. */
  readonly jitter?: Jitter;
}

/** The retry budget, per origin. */
export interface RetryBudgetOptions {
  /** Retries allowed per first attempt in the window. Default `0.1` (10 %). */
  readonly ratio?: number;
  /** Retries allowed in the window on top of the ratio, so a quiet client can still retry. Default `10`. */
  readonly minRetries?: number;
  /** The window. Default `10000` ms (10 s). */
  readonly window?: Duration;
}

/** Client-side adaptive throttling, per origin (Google SRE book). */
export interface AdaptiveThrottleOptions {
  /** Accepts multiplier K: a lower K throttles sooner. Default `2`. */
  readonly k?: number;
  /** The window requests and accepts are counted over. Default `120000` ms (2 min). */
  readonly window?: Duration;
}

/** Options of `createFetch`. Every one is optional. */
export interface ClientOptions {
  /** The fetch to wrap. Default `globalThis.fetch` (read when the function is called). */
  readonly fetch?: FetchLike;
  /** Most attempts per call, the first included. Default `3`. */
  readonly maxAttempts?: number;
  /** Most total waiting per call (pacing and retries). A wait that would pass it is not started: the call gives up at once. Default `60000` ms; `Infinity` for none. */
  readonly maxWait?: Duration;
  /** Most a server may ask the client to wait (`Retry-After`, or `RateLimit` `t`). A longer one is not waited: the call gives up at once with a `RateLimitedError`. Default `60000` ms; `Infinity` for none. */
  readonly maxRetryAfter?: Duration;
  /** Backoff when the server names no wait. Default `{ base: 100, cap: 20000, jitter: 'full' }`. */
  readonly backoff?: BackoffOptions;
  /** The retry budget per origin, or `false` for none. Default `{ ratio: 0.1, minRetries: 10, window: 10000 }`. */
  readonly budget?: RetryBudgetOptions | false;
  /** Client-side adaptive throttling per origin, or `false`. Default `false`. */
  readonly adaptiveThrottle?: AdaptiveThrottleOptions | false;
  /** Statuses that are retried (with `Retry-After` read). Default `[429, 503]`. */
  readonly retryOn?: readonly number[];
  /** Whether network errors (fetch rejecting with a `TypeError`) are retried. Default `true`. */
  readonly retryNetworkErrors?: boolean;
  /** Methods that are retried; any other is retried only with an `Idempotency-Key` header. Default `['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']` (RFC 9110's idempotent methods). */
  readonly retryMethods?: readonly string[];
  /** How `RateLimit` paces requests: `'burst'` waits only when a policy is spent, `'spread'` also spaces requests at the safe rate, `'off'` ignores the fields. Default `'burst'`. */
  readonly pacing?: Pacing;
  /** The partition a request belongs to within its origin, for the shared state (an API key, a tenant). Default: one partition per origin. */
  readonly partition?: (request: Request) => string;
  /** Called before each wait. Default: none. */
  readonly onWait?: (info: WaitInfo) => void;
  /**
   * Waits `ms`; the client also stops waiting at once when `signal` aborts.
   * Default: the built-in `setTimeout` wait, which keeps the process alive
   * unless `unref` is set.
   */
  readonly sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /**
   * Whether the built-in wait's timer is `unref()`'d, so that a wait does not
   * keep the process alive. Default `false`: a pending retry is pending work,
   * and a script that awaits the call gets its answer before it exits.
   *
   * With `true`, a process with nothing else to do exits in the middle of a
   * wait, and the call never settles (a top-level `await` then exits with
   * code 13). Use it in a long-lived process whose life something else
   * decides (a server, a worker), where a background call must not hold up
   * its exit. Where the timer has no `unref` (workerd and browsers, whose
   * `setTimeout` returns a number) it changes nothing. Refused together with
   * `sleep`, whose timer is yours.
   *
   * @example
   * ```ts
   * // A background refresher that must never keep the service from exiting.
   * const api = createFetch({ unref: true });
   * ```
   */
  readonly unref?: boolean;
  /** Uniform in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
  /** The clock (for dates and windows). Default the system clock. */
  readonly clock?: Clock;
  /** Aborts every wait and request of this client (shutdown). Default: none. */
  readonly signal?: AbortSignal;
}

/** Options after defaults and validation. */
export interface ResolvedOptions {
  readonly fetch: FetchLike | undefined;
  readonly maxAttempts: number;
  readonly maxWait: number;
  readonly maxRetryAfter: number;
  readonly backoff: Backoff;
  readonly budget: BudgetParams | undefined;
  readonly adaptiveThrottle: ThrottleParams | undefined;
  readonly retryOn: ReadonlySet<number>;
  readonly retryNetworkErrors: boolean;
  readonly retryMethods: ReadonlySet<string>;
  readonly pacing: Pacing;
  readonly partition: ((request: Request) => string) | undefined;
  readonly onWait: ((info: WaitInfo) => void) | undefined;
  readonly sleep: ((ms: number, signal: AbortSignal | undefined) => Promise<void>) | undefined;
  readonly unref: boolean;
  readonly random: () => number;
  readonly clock: Clock | undefined;
  readonly signal: AbortSignal | undefined;
}

export const DEFAULTS = {
  maxAttempts: 3,
  maxWait: 60_000,
  maxRetryAfter: 60_000,
  backoff: { base: 100, cap: 20_000, jitter: 'full' },
  budget: { ratio: 0.1, minRetries: 10, windowMs: 10_000 },
  adaptiveThrottle: { k: 2, windowMs: 120_000 },
  retryOn: [429, 503],
  retryMethods: ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'],
  pacing: 'burst',
  retryNetworkErrors: true,
  unref: false,
} as const;

const OPTION_NAMES = [
  'fetch',
  'maxAttempts',
  'maxWait',
  'maxRetryAfter',
  'backoff',
  'budget',
  'adaptiveThrottle',
  'retryOn',
  'retryNetworkErrors',
  'retryMethods',
  'pacing',
  'partition',
  'onWait',
  'sleep',
  'unref',
  'random',
  'clock',
  'signal',
] as const;

function bad(option: string, message: string): ConfigError {
  return new ConfigError('RC_INVALID_OPTION', `createFetch.${option}`, message);
}

function object(value: unknown, option: string, names: readonly string[]): Record<string, unknown> {
  const where = option === '' ? 'createFetch' : `createFetch.${option}`;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ConfigError('RC_INVALID_OPTION', where, `must be an object, got ${describe(value)}`);
  const o = value as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !names.includes(k));
  if (unknown.length > 0) throw new ConfigError('RC_INVALID_OPTION', where, unknownOptions(unknown, names));
  return o;
}

/** Most unknown names one message lists; a larger object gets a count for the rest. */
const MAX_NAMED = 10;

/**
 * `unknown option "maxAttempt"; did you mean "maxAttempts"? (known: ...)`, the
 * core's wording; several are each named with their own hint, the first
 * `MAX_NAMED` of them.
 */
function unknownOptions(unknown: readonly string[], names: readonly string[]): string {
  const known = `(known: ${names.join(', ')})`;
  if (unknown.length === 1) {
    const [name] = unknown as [string];
    const hit = closest(name, names);
    return `unknown option ${JSON.stringify(name)}${hit === undefined ? '' : `; did you mean ${JSON.stringify(hit)}?`} ${known}`;
  }
  const listed = unknown.slice(0, MAX_NAMED).map((name) => {
    const hit = closest(name, names);
    return `${JSON.stringify(name)}${hit === undefined ? '' : ` (did you mean ${JSON.stringify(hit)}?)`}`;
  });
  const more = unknown.length > MAX_NAMED ? ` and ${unknown.length - MAX_NAMED} more` : '';
  return `unknown options ${listed.join(', ')}${more} ${known}`;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return typeof v;
}

/** A duration option: a non-negative integer of ms, a duration string, or (where allowed) `Infinity`. */
function duration(value: unknown, option: string, fallback: number, opts: { zero: boolean; infinite: boolean }): number {
  if (value === undefined) return fallback;
  if (value === Infinity && opts.infinite) return Infinity;
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && (value > 0 || (value === 0 && opts.zero))) return value;
    throw bad(option, `must be ${opts.zero ? 'a non-negative' : 'a positive'} integer number of milliseconds${opts.infinite ? ' or Infinity' : ''}, got ${describe(value)}`);
  }
  if (typeof value === 'string') {
    try {
      return parseDuration(value, `createFetch.${option}`);
    } catch {
      throw bad(option, `expected a duration such as '500ms', '30s', '2m' or a number of milliseconds, got ${describe(value)}`);
    }
  }
  throw bad(option, `expected a duration, got ${describe(value)}`);
}

function fn<T>(value: unknown, option: string): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw bad(option, `must be a function, got ${describe(value)}`);
  return value as T;
}

function finite(value: unknown, option: string, fallback: number, check: (n: number) => boolean, expected: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || !check(value)) throw bad(option, `must be ${expected}, got ${describe(value)}`);
  return value;
}

const JITTERS: readonly Jitter[] = ['full', 'equal', 'decorrelated', 'none'];
const PACINGS: readonly Pacing[] = ['burst', 'spread', 'off'];
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Applies defaults and checks every option; throws a `ConfigError` (`RC_INVALID_OPTION`) naming the first bad one. */
export function resolveOptions(options: ClientOptions | undefined): ResolvedOptions {
  const o = object(options === undefined ? {} : options, '', OPTION_NAMES);

  const maxAttempts = finite(o.maxAttempts, 'maxAttempts', DEFAULTS.maxAttempts, (n) => Number.isInteger(n) && n >= 1, 'an integer >= 1');
  const maxWait = duration(o.maxWait, 'maxWait', DEFAULTS.maxWait, { zero: true, infinite: true });
  const maxRetryAfter = duration(o.maxRetryAfter, 'maxRetryAfter', DEFAULTS.maxRetryAfter, { zero: true, infinite: true });

  const b = o.backoff === undefined ? {} : object(o.backoff, 'backoff', ['base', 'cap', 'jitter']);
  const base = duration(b.base, 'backoff.base', DEFAULTS.backoff.base, { zero: false, infinite: false });
  const cap = duration(b.cap, 'backoff.cap', Math.max(base, DEFAULTS.backoff.cap), { zero: false, infinite: false });
  if (cap < base) throw bad('backoff.cap', `must be >= backoff.base (${base} ms), got ${cap}`);
  const jitter = b.jitter ?? DEFAULTS.backoff.jitter;
  if (!JITTERS.includes(jitter as Jitter)) throw bad('backoff.jitter', `must be one of ${JITTERS.map((j) => `'${j}'`).join(', ')}, got ${describe(jitter)}`);

  let budget: BudgetParams | undefined;
  if (o.budget !== false) {
    const g = o.budget === undefined ? {} : object(o.budget, 'budget', ['ratio', 'minRetries', 'window']);
    budget = {
      ratio: finite(g.ratio, 'budget.ratio', DEFAULTS.budget.ratio, (n) => n >= 0, 'a finite number >= 0'),
      minRetries: finite(g.minRetries, 'budget.minRetries', DEFAULTS.budget.minRetries, (n) => Number.isInteger(n) && n >= 0, 'an integer >= 0'),
      windowMs: duration(g.window, 'budget.window', DEFAULTS.budget.windowMs, { zero: false, infinite: false }),
    };
  }

  let adaptiveThrottle: ThrottleParams | undefined;
  if (o.adaptiveThrottle !== undefined && o.adaptiveThrottle !== false) {
    const a = object(o.adaptiveThrottle, 'adaptiveThrottle', ['k', 'window']);
    adaptiveThrottle = {
      k: finite(a.k, 'adaptiveThrottle.k', DEFAULTS.adaptiveThrottle.k, (n) => n >= 1, 'a finite number >= 1'),
      windowMs: duration(a.window, 'adaptiveThrottle.window', DEFAULTS.adaptiveThrottle.windowMs, { zero: false, infinite: false }),
    };
  }

  const retryOn = o.retryOn ?? DEFAULTS.retryOn;
  if (!Array.isArray(retryOn) || !retryOn.every((s) => Number.isInteger(s) && (s as number) >= 400 && (s as number) <= 599)) {
    throw bad('retryOn', `must be an array of statuses from 400 to 599, got ${describe(retryOn)}`);
  }
  const retryMethods = o.retryMethods ?? DEFAULTS.retryMethods;
  if (!Array.isArray(retryMethods) || !retryMethods.every((m) => typeof m === 'string' && TOKEN.test(m))) {
    throw bad('retryMethods', `must be an array of method names, got ${describe(retryMethods)}`);
  }
  if (o.retryNetworkErrors !== undefined && typeof o.retryNetworkErrors !== 'boolean') throw bad('retryNetworkErrors', `must be a boolean, got ${describe(o.retryNetworkErrors)}`);
  if (o.unref !== undefined && typeof o.unref !== 'boolean') throw bad('unref', `must be a boolean, got ${describe(o.unref)}`);
  if (o.unref === true && o.sleep !== undefined) throw bad('unref', 'applies to the built-in wait only: with your own sleep, its timer decides whether the process stays alive');
  const pacing = o.pacing ?? DEFAULTS.pacing;
  if (!PACINGS.includes(pacing as Pacing)) throw bad('pacing', `must be one of ${PACINGS.map((p) => `'${p}'`).join(', ')}, got ${describe(pacing)}`);

  const clock = o.clock;
  if (clock !== undefined && (clock === null || typeof (clock as Clock).now !== 'function')) throw bad('clock', 'must have a now() method');
  const signal = o.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw bad('signal', `must be an AbortSignal, got ${describe(signal)}`);

  return {
    fetch: fn<FetchLike>(o.fetch, 'fetch'),
    maxAttempts,
    maxWait,
    maxRetryAfter,
    backoff: { base, cap, jitter: jitter as Jitter },
    budget,
    adaptiveThrottle,
    retryOn: new Set(retryOn as number[]),
    retryNetworkErrors: o.retryNetworkErrors ?? DEFAULTS.retryNetworkErrors,
    retryMethods: new Set((retryMethods as string[]).map((m) => m.toUpperCase())),
    pacing: pacing as Pacing,
    partition: fn(o.partition, 'partition'),
    onWait: fn(o.onWait, 'onWait'),
    sleep: fn(o.sleep, 'sleep'),
    unref: o.unref ?? DEFAULTS.unref,
    random: fn<() => number>(o.random, 'random') ?? Math.random,
    clock: clock as Clock | undefined,
    signal: signal,
  };
}
