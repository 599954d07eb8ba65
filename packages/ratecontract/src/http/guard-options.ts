import type { Duration } from '../core/duration.js';
import type { Limiter } from '../core/limiter.js';
import type { Criticality, Shedder } from '../core/shedder.js';
import type { Decision, RequestContext } from '../core/types.js';
import type { BodyRead } from './body.js';
import type { HeaderRecord } from './forwarded.js';
import type { IpOptions } from './client-ip.js';
import type { HttpResponse } from './respond.js';
import type { ResponseOptions } from './response-options.js';

/**
 * Options every adapter accepts. `Req` is the adapter's request type (passed
 * to the hooks); `Ctx` is the context type of the limiter (default
 * `RequestContext`).
 */
export interface GuardOptions<Req, Ctx = RequestContext> extends ResponseOptions, IpOptions {
  /**
   * Builds the context the limiter's keys see from the request and the base
   * context the guard made (`{ ip, principal, method, path, headers, query,
   * body }`), for a limiter whose `Ctx` has fields of its own: return
   * `{ ...base, tenant: req.tenant }`. Required (by the types) when `Ctx`
   * needs more than the base; may be async; runs once per request. A throw
   * is answered 503, like a throwing `identify`. Default: the base context.
   */
  readonly context?: ((req: Req, base: RequestContext) => Ctx | Promise<Ctx>) | undefined;
  /**
   * The authenticated principal (account, API key id, tenant), or `undefined`
   * for an anonymous caller. Feeds `key: 'principal'` and decides who is told
   * the policy table (`advertise`). May be async. Default: everyone is anonymous.
   */
  readonly identify?: ((req: Req) => string | undefined | Promise<string | undefined>) | undefined;
  /** Cost of this request (a positive integer); `undefined` for each limit's own `cost`. */
  readonly cost?: ((req: Req) => number | undefined) | undefined;
  /** Chooses the limiter for a request: a `Limiter`, `false` to skip limiting, `undefined` for the default one. */
  readonly limiterFor?: ((req: Req) => Limiter<Ctx> | false | undefined) | undefined;
  /** Largest JSON body read for `body.*` keys, in bytes. Over it: 413. Default 102400 (100 KiB). */
  readonly maxBodyBytes?: number | undefined;
  /** Read and parse the body even if no limit uses a `body.*` key (for key functions that read `ctx.body`). Default false. */
  readonly readBody?: boolean | undefined;
  /** `Retry-After` of the 503 sent when something unexpected fails (a throwing `identify`). Default `'1s'`. */
  readonly errorRetryAfter?: Duration | undefined;
  /** Called with anything unexpected the guard caught (it then answered 503). Default: nothing. */
  readonly onUnexpectedError?: ((error: unknown, req: Req) => void) | undefined;
  /**
   * A load shedder (`createShedder`) in front of the limiter: a request it
   * sheds is answered 503 with `Retry-After` (problem+json
   * `temporary-reduced-capacity`) before any limit is checked. Requests
   * the guard does not limit (`limiterFor` returned `false`) are not shed.
   * Default: none.
   */
  readonly shedder?: Shedder | undefined;
  /**
   * The request's criticality for the shedder: `'critical'` (keeps a
   * reserve), `'default'`, or `'sheddable'` (shed first). Anything else,
   * or a throw, counts as `'default'`. Default: every request is `'default'`.
   */
  readonly criticality?: ((req: Req) => Criticality | undefined) | undefined;
  /** Waits `ms` (leaky-bucket queue mode); resolves early when `signal` aborts. Default: an unref'd timer. Inject in tests. */
  readonly delay?: ((ms: number, signal: AbortSignal | undefined) => Promise<void>) | undefined;
}

/**
 * An adapter's options argument: optional, except when the limiter's `Ctx`
 * needs more than the base context the guard builds, when `context` is
 * required.
 */
export type OptionsArgument<O extends { readonly context?: unknown }, Ctx> = RequestContext extends Ctx
  ? [options?: O]
  : [options: O & { readonly context: NonNullable<O['context']> }];

/** What an adapter tells the guard about one request. */
export interface RequestFacts<Req> {
  readonly req: Req;
  /** The socket peer address. */
  readonly remoteAddress: string | undefined;
  readonly method: string | undefined;
  /** Path and query as sent (`/a/b?x=1`). */
  readonly url: string | undefined;
  /** Lower-case names. */
  readonly headers: HeaderRecord;
  /** The body, when the framework has already parsed it. */
  readonly parsedBody?: { readonly value: unknown } | undefined;
  /** Reads the raw body up to `max` bytes; the adapter keeps what it read for the application. */
  readonly readBody?: ((max: number) => Promise<BodyRead>) | undefined;
  /** An abort signal for the client connection (created on demand, for the queue-mode wait). */
  readonly signal?: (() => AbortSignal | undefined) | undefined;
}

/** What the adapter does next. */
export type GuardResult =
  /** Go on; add `responseFields` to the application's response; release `decision` when the response is done. */
  | {
      readonly kind: 'proceed';
      readonly decision: Decision | undefined;
      /** Header fields to add to the application's response (`RateLimit`, `RateLimit-Policy`, ...); `ctx.headers` are the request's. */
      readonly responseFields: Readonly<Record<string, string>>;
      /**
       * Whether the decision may hold settlements to finish when the response
       * is done: concurrency leases to release, a `count: 'failures'` attempt
       * to settle, a shed ticket to end (else adapters skip the bookkeeping).
       */
      readonly holdsSettlements: boolean;
    }
  /** Send `response`; the request stops here (any lease is already released). */
  | { readonly kind: 'respond'; readonly decision: Decision | undefined; readonly response: HttpResponse }
  /** The client went away during the queue-mode wait; nothing to send. */
  | { readonly kind: 'gone'; readonly decision: Decision | undefined };

