import { parseDuration } from '../core/duration.js';
import { ConfigError } from '../core/errors.js';
import { refuseUnknown } from '../core/options.js';
import { decisionKeys, WANT_KEYS, type Limiter } from '../core/limiter.js';
import type { Criticality, Shedder, ShedTicket } from '../core/shedder.js';
import type { CheckOptions, CompiledLimit, Decision, RequestContext } from '../core/types.js';
import { DEFAULT_MAX_BODY_BYTES, parseJsonBody } from './body.js';
import { baseContext } from './context.js';
import type { GuardOptions, GuardResult, RequestFacts } from './guard-options.js';
import { resolveIpOptions, type ResolvedIpOptions } from './client-ip.js';
import { contentTooLargeResponse, isAdvertising, mapDecision, unavailableResponse, type HttpResponse } from './respond.js';
import { resolveResponseOptions, type ResolvedResponseOptions } from './response-options.js';
import { sleep } from './sleep.js';
import { traits, type Traits } from './traits.js';

/** Default `errorRetryAfter`: the `Retry-After` of the 503 an adapter sends when something unexpected fails, ms. */
export const DEFAULT_ERROR_RETRY_AFTER_MS = 1000;

export { UNKNOWN_IP } from './context.js';
export type { GuardOptions, GuardResult, OptionsArgument, RequestFacts } from './guard-options.js';
export { holdsLeases, usesBody, usesHeaders, usesQuery } from './traits.js';

function assertLimiter(limiter: unknown, option: string): asserts limiter is Limiter {
  const l = limiter as Partial<Limiter> | null;
  if (l === null || typeof l !== 'object' || typeof l.check !== 'function' || !Array.isArray(l.limits)) {
    throw new ConfigError('RC_INVALID_OPTION', option, 'expected a limiter from createLimiter()');
  }
}

/** Something `HttpGuard.quick` caught: answer it with `fail` (a 503). */
export class Unexpected {
  constructor(readonly error: unknown) {}
}

/** Every option an adapter takes (`HttpGuard` validates them; adapters pass theirs through). */
const GUARD_OPTIONS: readonly string[] = [
  'identify', 'context', 'cost', 'limiterFor', 'maxBodyBytes', 'readBody', 'errorRetryAfter', 'onUnexpectedError', 'delay',
  'advertise', 'fields', 'legacyHeaders', 'advertiseCapacity', 'windowCap', 'partitionKeys', 'partitionKeySecret', 'clock',
  'trustProxy', 'forwardedHeader', 'ipv6Prefix', 'ipv4Prefix', 'shedder', 'criticality',
];

/**
 * Whether a decision lets the request go on with nothing to tell an
 * anonymous, unadvertised caller and nothing to wait for: the one rule for
 * the short-circuit every path takes (the guard, and the adapters' one-step
 * paths).
 */
export function goesOnAsIs(decision: Decision): boolean {
  return decision.allowed && decision.delayMs <= 0;
}

/**
 * A decision that also ends a shed ticket when the adapter releases it
 * (when the response is done); everything else is the decision's own.
 */
class TicketDecision implements Decision {
  #ticket: ShedTicket | undefined;
  constructor(
    readonly inner: Decision,
    ticket: ShedTicket,
  ) {
    this.#ticket = ticket;
  }
  get allowed(): boolean {
    return this.inner.allowed;
  }
  get status(): Decision['status'] {
    return this.inner.status;
  }
  get outcome(): Decision['outcome'] {
    return this.inner.outcome;
  }
  get limitName(): string | undefined {
    return this.inner.limitName;
  }
  get retryAfterMs(): number {
    return this.inner.retryAfterMs;
  }
  get delayMs(): number {
    return this.inner.delayMs;
  }
  get results(): Decision['results'] {
    return this.inner.results;
  }
  release(): Promise<void> {
    this.#ticket?.done();
    this.#ticket = undefined;
    return this.inner.release();
  }
  settle(outcome: Parameters<Decision['settle']>[0]): Promise<void> {
    return this.inner.settle(outcome);
  }
}

/**
 * Hands a shed ticket on with a request that goes on (the adapter releases
 * the decision when the response is done, which ends the ticket), or ends
 * it at once when the request stops here.
 */
function withTicket(result: GuardResult, ticket: ShedTicket): GuardResult {
  if (result.kind !== 'proceed' || result.decision === undefined) {
    ticket.done();
    return result;
  }
  return { kind: 'proceed', decision: new TicketDecision(result.decision, ticket), responseFields: result.responseFields, holdsSettlements: true };
}

/** The check options that ask for the keys and nothing else (shared). */
const KEYS_ONLY = Object.freeze({ [WANT_KEYS]: true }) as CheckOptions;
/** The fields of a `proceed` result that adds nothing (shared; never mutate). */
const NO_FIELDS: Readonly<Record<string, string>> = Object.freeze({});
const NOTHING_TO_DO: GuardResult = Object.freeze({ kind: 'proceed', decision: undefined, responseFields: NO_FIELDS, holdsSettlements: false });

/**
 * The request-side half every adapter shares: choose the limiter, resolve the
 * client address through trusted proxies, identify the caller, read a bounded
 * body when a limit needs it, check, wait in queue mode, and map the decision.
 * It never throws: anything unexpected becomes a 503 with `Retry-After`.
 */
export class HttpGuard<Req, Ctx = RequestContext> {
  readonly limiter: Limiter;
  readonly response: ResolvedResponseOptions;
  readonly ip: ResolvedIpOptions;
  readonly maxBodyBytes: number;
  readonly #options: GuardOptions<Req, Ctx>;
  readonly #errorRetryAfterMs: number;
  readonly #delay: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /** The default limiter's traits (other limiters' come from a WeakMap). */
  readonly #traits: Traits;
  /** Whether `quick` may decide: see there. */
  readonly #quick: boolean;
  readonly #shedder: Shedder | undefined;

  constructor(limiter: Limiter<Ctx>, options: GuardOptions<Req, Ctx> = {}) {
    assertLimiter(limiter, 'limiter');
    if (options === null || typeof options !== 'object') throw new ConfigError('RC_INVALID_OPTION', 'options', 'must be an object');
    refuseUnknown(options, GUARD_OPTIONS, '');
    for (const name of ['identify', 'context', 'cost', 'limiterFor', 'onUnexpectedError', 'delay', 'criticality'] as const) {
      const f = options[name];
      if (f !== undefined && typeof f !== 'function') throw new ConfigError('RC_INVALID_OPTION', name, `must be a function, got ${typeof f}`);
    }
    // Internally the limiter is called with the context `context` built (a Ctx) or the base one (Ctx accepts it).
    this.limiter = limiter;
    this.response = resolveResponseOptions(options);
    this.ip = resolveIpOptions(options);
    const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    if (!Number.isSafeInteger(max) || max < 0) throw new ConfigError('RC_INVALID_OPTION', 'maxBodyBytes', `must be a non-negative integer, got ${String(max)}`);
    this.maxBodyBytes = max;
    if (options.readBody !== undefined && typeof options.readBody !== 'boolean') throw new ConfigError('RC_INVALID_OPTION', 'readBody', 'must be a boolean');
    this.#errorRetryAfterMs = options.errorRetryAfter === undefined ? DEFAULT_ERROR_RETRY_AFTER_MS : parseDuration(options.errorRetryAfter, 'errorRetryAfter');
    this.#delay = options.delay ?? sleep;
    const shedder = options.shedder;
    if (shedder !== undefined && (shedder === null || typeof shedder !== 'object' || typeof shedder.admit !== 'function')) {
      throw new ConfigError('RC_INVALID_OPTION', 'shedder', 'expected a shedder from createShedder()');
    }
    if (options.criticality !== undefined && shedder === undefined) throw new ConfigError('RC_INVALID_OPTION', 'criticality', 'applies with a shedder only');
    this.#shedder = shedder;
    this.#options = options;
    const t = traits(limiter);
    this.#traits = t;
    this.#quick =
      options.limiterFor === undefined &&
      options.identify === undefined &&
      options.context === undefined &&
      options.cost === undefined &&
      options.shedder === undefined &&
      options.readBody !== true &&
      this.ip.trust.kind === 'none' &&
      !t.body &&
      !t.readsHeaders &&
      !t.leases &&
      !t.settles &&
      !isAdvertising(false, this.response) &&
      typeof limiter.checkSync === 'function';
  }

  /**
   * The common case in one step, for adapters that have the socket address,
   * method and URL at hand. It applies when the guard has no `limiterFor`,
   * `identify`, `cost` or `readBody`, trusts no proxy, tells anonymous
   * callers nothing, and its limiter reads no header or body, holds no
   * leases and decides at once (an in-process store). Then it decides and
   * returns the decision: when it is allowed with no delay the request simply
   * goes on (nothing to add, nothing to release); any other decision is
   * answered through `conclude`. Returns `undefined`, having decided nothing,
   * when it does not apply (use `decide`), and an `Unexpected` if something
   * was thrown (answer it with `fail`).
   */
  quick(remoteAddress: string | undefined, method: string | undefined, url: string | undefined): Decision | Unexpected | undefined {
    if (!this.#quick) return undefined;
    try {
      return this.limiter.checkSync(this.#quickContext(remoteAddress, method, url));
    } catch (error) {
      return new Unexpected(error);
    }
  }

  /** Answers a decision `quick` returned (a rejection, a queue-mode delay); calls `done` once, never throws. */
  conclude<F extends RequestFacts<Req>>(decision: Decision, facts: F, done: (result: GuardResult, facts: F) => void): void {
    this.#finish(decision, this.limiter, facts, done);
  }

  #quickContext(remoteAddress: string | undefined, method: string | undefined, url: string | undefined): RequestContext {
    return baseContext(remoteAddress, method, url, undefined, this.ip, this.#traits, undefined, undefined);
  }

  #traitsOf(limiter: Limiter): Traits {
    return limiter === this.limiter ? this.#traits : traits(limiter);
  }

  /** The limiter for this request, or `false` to skip it. Throws only if `limiterFor` does. */
  select(req: Req): Limiter | false {
    const chosen = this.#options.limiterFor?.(req);
    if (chosen === undefined) return this.limiter;
    if (chosen === false) return false;
    assertLimiter(chosen, 'limiterFor(req)');
    return chosen;
  }

  /** Whether the body must be read for `limiter`. */
  needsBody(limiter: Limiter): boolean {
    return this.#options.readBody === true || this.#traitsOf(limiter).body;
  }

  /**
   * Whether deciding for `limiter` can read request headers (header keys,
   * key functions, trusted proxies, body content type). Adapters whose
   * runtime builds headers lazily skip building them when this is false.
   */
  needsHeaders(limiter: Limiter): boolean {
    return this.#options.trustProxy !== undefined || this.needsBody(limiter) || this.#traitsOf(limiter).readsHeaders;
  }

  /** Whether a decision of `limiter` can hold something to release when the response is done (concurrency leases, a `count: 'failures'` attempt to settle, a shed ticket). */
  holdsSettlements(limiter: Limiter): boolean {
    // A shed ticket is held until the response is done, like a lease.
    if (this.#shedder !== undefined) return true;
    const t = this.#traitsOf(limiter);
    return t.leases || t.settles;
  }

  /** Decides one request. Never rejects. */
  run(facts: RequestFacts<Req>, chosen?: Limiter | false): Promise<GuardResult> {
    return new Promise((resolve) => {
      this.decide(facts, chosen, resolve);
    });
  }

  /**
   * `run` in callback form, for adapters whose framework takes callbacks (no
   * promise per step, no closure per request: `done` gets `facts` back).
   * Calls `done` exactly once, synchronously when no limiter applies, and
   * after the limiter's decision otherwise. Never throws.
   */
  decide<F extends RequestFacts<Req>>(facts: F, chosen: Limiter | false | undefined, done: (result: GuardResult, facts: F) => void): void {
    if (this.#shedder === undefined) {
      this.#decide(facts, chosen, done);
      return;
    }
    let picked: Limiter | false;
    try {
      picked = chosen ?? this.select(facts.req);
    } catch (error) {
      this.#failTo(error, facts, undefined, done);
      return;
    }
    if (picked === false) {
      done(NOTHING_TO_DO, facts);
      return;
    }
    const answer = this.#shedder.admit(this.#criticality(facts.req));
    if (!answer.admitted) {
      done({ kind: 'respond', decision: undefined, response: unavailableResponse(answer.retryAfterMs) }, facts);
      return;
    }
    const ticket = answer.ticket;
    this.#decide(facts, picked, (result, f) => done(withTicket(result, ticket), f));
  }

  /** The request's class; anything but a known class, or a throw, is `'default'`. */
  #criticality(req: Req): Criticality {
    try {
      const c = this.#options.criticality?.(req);
      return c === 'critical' || c === 'sheddable' ? c : 'default';
    } catch {
      return 'default';
    }
  }

  #decide<F extends RequestFacts<Req>>(facts: F, chosen: Limiter | false | undefined, done: (result: GuardResult, facts: F) => void): void {
    let limiter: Limiter | false;
    let ctx: RequestContext;
    let check: Promise<Decision> | undefined;
    let decided: Decision | undefined;
    try {
      limiter = chosen ?? this.select(facts.req);
      if (limiter !== false) {
        const needsBody = this.needsBody(limiter);
        if (this.#options.identify !== undefined || this.#options.context !== undefined || (needsBody && facts.parsedBody === undefined)) {
          // Something to wait for before the check (the principal, the body, the user's context): the general path.
          this.#runAsync(facts, limiter).then(
            (result) => done(result, facts),
            (error: unknown) => this.#failTo(error, facts, undefined, done),
          );
          return;
        }
        ctx = this.#context(facts, limiter, undefined, needsBody ? facts.parsedBody?.value : undefined);
        const options = this.#checkOptions(facts.req, false);
        // An in-process store decides at once: no promise to wait on.
        decided = typeof limiter.checkSync === 'function' ? limiter.checkSync(ctx, options) : undefined;
        if (decided === undefined) check = limiter.check(ctx, options);
      }
    } catch (error) {
      this.#failTo(error, facts, undefined, done);
      return;
    }
    if (limiter === false || (check === undefined && decided === undefined)) {
      done(NOTHING_TO_DO, facts);
      return;
    }
    const chosenLimiter = limiter;
    if (decided !== undefined) {
      this.#finish(decided, chosenLimiter, facts, done);
      return;
    }
    (check as Promise<Decision>).then(
      (decision) => this.#finish(decision, chosenLimiter, facts, done),
      (error: unknown) => this.#failTo(error, facts, undefined, done),
    );
  }

  /** Maps a decision and hands the result to `done`. */
  #finish<F extends RequestFacts<Req>>(decision: Decision, limiter: Limiter, facts: F, done: (result: GuardResult, facts: F) => void): void {
    let result: GuardResult | Promise<GuardResult>;
    try {
      result = this.#settle(decision, limiter, undefined, facts);
    } catch (error) {
      this.#failTo(error, facts, decision, done);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (r) => done(r, facts),
        (error: unknown) => this.#failTo(error, facts, decision, done),
      );
    } else done(result, facts);
  }

  #failTo<F extends RequestFacts<Req>>(error: unknown, facts: F, decision: Decision | undefined, done: (result: GuardResult, facts: F) => void): void {
    void this.fail(error, facts.req, decision).then((result) => done(result, facts));
  }

  /** The general path: identify the caller and read the body first. */
  async #runAsync(facts: RequestFacts<Req>, limiter: Limiter): Promise<GuardResult> {
    let decision: Decision | undefined;
    try {
      const principal = this.#options.identify === undefined ? undefined : await this.#identify(facts.req);
      let body: unknown;
      if (this.needsBody(limiter)) {
        if (facts.parsedBody !== undefined) {
          body = facts.parsedBody.value;
        } else if (facts.readBody !== undefined) {
          const read = await facts.readBody(this.maxBodyBytes);
          if (read.tooLarge) return { kind: 'respond', decision: undefined, response: contentTooLargeResponse(this.maxBodyBytes) };
          body = parseJsonBody(read.bytes);
        }
      }
      const base = this.#context(facts, limiter, principal, body);
      const ctx = this.#options.context === undefined ? base : ((await this.#options.context(facts.req, base)) as RequestContext);
      decision = await limiter.check(ctx, this.#checkOptions(facts.req, principal !== undefined));
      return await this.#settle(decision, limiter, principal, facts);
    } catch (error) {
      return this.fail(error, facts.req, decision);
    }
  }

  /** The context the limits' keys see: the headers only when a limit, a trusted proxy or the body reads them. */
  #context(facts: RequestFacts<Req>, limiter: Limiter, principal: string | undefined, body: unknown): RequestContext {
    const t = this.#traitsOf(limiter);
    const proxied = this.ip.trust.kind !== 'none';
    const headers = proxied || t.readsHeaders || t.body || this.#options.readBody === true ? facts.headers : undefined;
    return baseContext(facts.remoteAddress, facts.method, facts.url, headers, this.ip, t, principal, body);
  }

  /**
   * The check's options: the request's cost, and whether the decision must
   * carry each limit's key (for partition keys in the fields this caller is
   * told), so no key function runs a second time.
   */
  #checkOptions(req: Req, authenticated: boolean): CheckOptions | undefined {
    const cost = this.#options.cost?.(req);
    const keys = this.response.partitionKeys && isAdvertising(authenticated, this.response);
    if (!keys) return cost === undefined ? undefined : { cost };
    return cost === undefined ? KEYS_ONLY : ({ cost, [WANT_KEYS]: true } as CheckOptions);
  }

  /** Maps the decision; a promise only when something is left to wait for (releasing a rejection, the queue-mode delay). */
  #settle(decision: Decision, limiter: Limiter, principal: string | undefined, facts: RequestFacts<Req>): GuardResult | Promise<GuardResult> {
    const authenticated = principal !== undefined;
    const advertising = isAdvertising(authenticated, this.response);
    if (goesOnAsIs(decision) && !advertising) {
      // Nothing to tell this caller: the common case, without building a response.
      return { kind: 'proceed', decision, responseFields: NO_FIELDS, holdsSettlements: this.holdsSettlements(limiter) };
    }
    const keys = this.response.partitionKeys && advertising ? decisionKeys(decision) : undefined;
    const keyOf = keys === undefined ? undefined : (l: CompiledLimit): string | undefined => keys[limiter.limits.indexOf(l)];
    const mapped = mapDecision(decision, { limits: limiter.limits, authenticated, keyOf }, this.response);
    if (!decision.allowed) return this.#reject(decision, mapped);
    if (decision.delayMs > 0) return this.#wait(decision, mapped, limiter, facts);
    return { kind: 'proceed', decision, responseFields: mapped.headers, holdsSettlements: this.holdsSettlements(limiter) };
  }

  /** A rejection: answered at once; anything the decision holds is released in the background (release never rejects). */
  #reject(decision: Decision, mapped: HttpResponse): GuardResult {
    decision.release().catch(() => undefined);
    return { kind: 'respond', decision, response: mapped };
  }

  async #wait(decision: Decision, mapped: HttpResponse, limiter: Limiter, facts: RequestFacts<Req>): Promise<GuardResult> {
    const signal = facts.signal?.();
    await this.#delay(decision.delayMs, signal);
    if (signal?.aborted === true) {
      await decision.release();
      return { kind: 'gone', decision };
    }
    return { kind: 'proceed', decision, responseFields: mapped.headers, holdsSettlements: this.holdsSettlements(limiter) };
  }

  /** The 503 answer to anything unexpected; releases `decision`. Never rejects. */
  async fail(error: unknown, req: Req, decision?: Decision): Promise<GuardResult> {
    try {
      this.#options.onUnexpectedError?.(error, req);
    } catch {
      // A throwing reporter must not turn a 503 into a 500.
    }
    if (decision !== undefined) await decision.release().catch(() => undefined);
    return { kind: 'respond', decision, response: unavailableResponse(this.#errorRetryAfterMs) };
  }

  async #identify(req: Req): Promise<string | undefined> {
    const identify = this.#options.identify;
    if (identify === undefined) return undefined;
    const p: unknown = await identify(req);
    if (p === undefined || p === null || p === '') return undefined;
    if (typeof p !== 'string') throw new TypeError(`identify(req) must return a string or undefined, got ${typeof p}`);
    return p;
  }
}
