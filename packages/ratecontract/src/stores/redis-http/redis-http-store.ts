import type { Clock } from '../../core/clock.js';
import { ConfigError } from '../../core/errors.js';
import { refuseUnknown } from '../../core/options.js';
import type { BreakerOptions } from '../../core/store-circuit.js';
import { RedisStore, type BatchOptions } from '../redis/redis-store.js';
import { RestClient, type FetchLike } from './rest-client.js';

/** `redisHttpStore()`'s defaults (docs/redis-http.md holds its table to these). */
export const REDIS_HTTP_STORE_DEFAULTS = Object.freeze({ deadlineMs: 100, loadTimeoutMs: 2000 } as const);

/** Options of `redisHttpStore()`. */
export interface RedisHttpStoreOptions {
  /**
   * The REST endpoint, `https://<name>.upstash.io` or any server of the
   * Upstash REST protocol; commands are POSTed to it, pipelines to
   * `<url>/pipeline`. Required: an `http:` or `https:` URL without
   * credentials, query or fragment.
   */
  readonly url: string;
  /** The REST token, sent as `Authorization: Bearer <token>`. Required, non-empty. */
  readonly token: string;
  /** A `fetch`-compatible function. Default `globalThis.fetch`, read at each request. */
  readonly fetch?: FetchLike | undefined;
  /** Prepended to every key. Default `'rc:'` (as `redisStore`). */
  readonly prefix?: string | undefined;
  /** `'server'` (default): decide at the Redis server's clock (`TIME` in the script). `'client'`: at the limiter's `now`. */
  readonly timeMode?: 'server' | 'client' | undefined;
  /** `'client'` time mode only: read time from this clock instead of the `now` each call passes. */
  readonly clock?: Clock | undefined;
  /** `'client'` time mode only: ms added to every TTL. Default 0. */
  readonly ttlGraceMs?: number | undefined;
  /** Keys are SHA-256 digests of the user key; with a secret, HMAC-SHA-256 digests. */
  readonly keySecret?: string | undefined;
  /**
   * Deadline of one call in ms: the limiter gives up on the call then (its
   * limits' fail modes decide), and the HTTP request is aborted then
   * (`AbortSignal.timeout`). Default 100: an HTTP round trip to a managed
   * endpoint costs more than a TCP one to a Redis next door.
   */
  readonly deadlineMs?: number | undefined;
  /** Each request that carries a SCRIPT LOAD (startup, NOSCRIPT reload) is aborted after this many ms. Default 2000. */
  readonly loadTimeoutMs?: number | undefined;
  /** Most checks in flight on this store at once; beyond it, a check gets its fail mode at once. Default 1000. */
  readonly maxInFlight?: number | undefined;
  /** How long the first checks wait for the scripts to load, ms from the limiter's creation. Default 1000. */
  readonly startupWaitMs?: number | undefined;
  /** Circuit breaker settings for this store (failure domain). Default: the limiter's. */
  readonly breaker?: BreakerOptions | undefined;
  /**
   * Checks that arrive in the same tick are decided by one script call (one
   * HTTP request), each chain still atomic. `false`: one script call per
   * check (checks of one microtask turn still share a `/pipeline` request).
   * Default `{ maxChecks: 16 }`.
   */
  readonly batch?: false | BatchOptions | undefined;
}

const OPTIONS: readonly string[] = ['url', 'token', 'fetch', 'prefix', 'timeMode', 'clock', 'ttlGraceMs', 'keySecret', 'deadlineMs', 'loadTimeoutMs', 'maxInFlight', 'startupWaitMs', 'breaker', 'batch'];

function bad(option: string, message: string): ConfigError {
  return new ConfigError('RC_INVALID_OPTION', `redisHttpStore.${option}`, message);
}

function positiveMs(value: unknown, option: string, byDefault: number): number {
  const v = value ?? byDefault;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw bad(option, `must be a positive number of ms, got ${typeof v === 'number' ? String(v) : typeof v}`);
  return v;
}

function endpoint(url: unknown): string {
  if (typeof url !== 'string' || url === '') throw bad('url', `is required: the REST endpoint, e.g. 'https://<name>.upstash.io', got ${url === '' ? 'an empty string' : typeof url}`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad('url', `is not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw bad('url', `must be an http: or https: URL, got ${parsed.protocol}`);
  if (parsed.username !== '' || parsed.password !== '') throw bad('url', 'must not carry credentials: give the token as `token`');
  if (parsed.search !== '' || parsed.hash !== '') throw bad('url', 'must have no query or fragment');
  return url;
}

/**
 * The Redis store over HTTP (the Upstash REST protocol, `fetch` alone), for
 * runtimes without TCP (workerd, edge functions) or a Redis that speaks only
 * HTTP. It is the Redis store (`ratecontract/redis`) with a REST client: the
 * same Lua twins by EVALSHA with a NOSCRIPT reload, server time, batching;
 * the limiter gives it the same deadlines, breaker and fail modes as every
 * store. A standalone endpoint: one failure domain, never a Cluster.
 */
export function redisHttpStore(options: RedisHttpStoreOptions): RedisStore {
  if (options === null || typeof options !== 'object') throw new ConfigError('RC_INVALID_OPTION', 'redisHttpStore', 'needs an options object with url and token');
  refuseUnknown(options, OPTIONS, 'redisHttpStore');
  const url = endpoint(options.url);
  if (typeof options.token !== 'string' || options.token === '') throw bad('token', `is required: a non-empty string (the REST token), got ${options.token === '' ? 'an empty string' : typeof options.token}`);
  if (options.fetch !== undefined && typeof options.fetch !== 'function') throw bad('fetch', `must be a fetch-compatible function, got ${typeof options.fetch}`);
  const deadlineMs = positiveMs(options.deadlineMs, 'deadlineMs', REDIS_HTTP_STORE_DEFAULTS.deadlineMs);
  const loadTimeoutMs = positiveMs(options.loadTimeoutMs, 'loadTimeoutMs', REDIS_HTTP_STORE_DEFAULTS.loadTimeoutMs);
  const client = new RestClient({ url, token: options.token, fetch: options.fetch, timeoutMs: deadlineMs, loadTimeoutMs });
  try {
    return new RedisStore({
      client,
      cluster: false,
      prefix: options.prefix,
      timeMode: options.timeMode,
      clock: options.clock,
      ttlGraceMs: options.ttlGraceMs,
      keySecret: options.keySecret,
      deadlineMs,
      maxInFlight: options.maxInFlight,
      startupWaitMs: options.startupWaitMs,
      breaker: options.breaker,
      batch: options.batch,
      // Every request ends by its own AbortSignal.timeout: there is no connection to find silently dead.
      deadConnectionMs: false,
      onDeadConnection: 'report',
    });
  } catch (error) {
    // The Redis store names its own options (redisStore.prefix): name them as the caller wrote them.
    if (error instanceof ConfigError && error.option.startsWith('redisStore.')) {
      throw new ConfigError(error.code, `redisHttpStore.${error.option.slice('redisStore.'.length)}`, error.message.slice(error.option.length + 2), { cause: error });
    }
    throw error;
  }
}
