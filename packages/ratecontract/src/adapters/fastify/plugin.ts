import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Limiter } from '../../core/limiter.js';
import type { Decision, RequestContext } from '../../core/types.js';
import { goesOnAsIs, HttpGuard, Unexpected, type GuardOptions, type GuardResult, type RequestFacts } from '../../http/guard.js';
import type { HttpResponse } from '../../http/respond.js';
import { connectionSignal, peerAddress, releaseWhenDone } from '../../http/node-connection.js';

/** Per-route choice, in the route's `config.rateLimit`: another limiter, or `false` for none. */
export interface RouteRateLimitConfig {
  /** The limiter for this route instead of the plugin's. */
  readonly limiter?: Limiter | undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `ratecontract/fastify`: `{ limiter }` to use another limiter on this route, `false` for none. */
    rateLimit?: RouteRateLimitConfig | false | undefined;
  }
  interface FastifyRequest {
    /** The rate-limit decision for this request, set by `ratecontract/fastify`. */
    rateLimit: Decision | undefined;
  }
}

/**
 * Options of `rateLimitPlugin`: the limiter plus the shared adapter options,
 * with the Fastify request as `req`. `Ctx`: the limiter's context type; a
 * limiter with fields of its own needs `context`.
 */
export interface FastifyRateLimitOptions<Ctx = RequestContext> extends GuardOptions<FastifyRequest, Ctx> {
  readonly limiter: Limiter<Ctx>;
}

function routeLimiter(guard: HttpGuard<FastifyRequest>, request: FastifyRequest): Limiter | false {
  const config = request.routeOptions.config.rateLimit;
  if (config === false) return false;
  if (config?.limiter !== undefined) return config.limiter;
  return guard.select(request);
}

/** One request's facts for the guard, carrying what the completion needs (no closure per request). */
class FastifyFacts implements RequestFacts<FastifyRequest> {
  readonly req: FastifyRequest;
  readonly reply: FastifyReply;
  readonly next: HookHandlerDoneFunction;
  readonly remoteAddress: string | undefined;
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly headers: FastifyRequest['headers'];
  readonly parsedBody: { readonly value: unknown } | undefined;

  constructor(request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction, withBody: boolean) {
    const raw = request.raw;
    this.req = request;
    this.reply = reply;
    this.next = next;
    this.remoteAddress = peerAddress(raw.socket);
    this.method = raw.method;
    this.url = raw.url;
    this.headers = request.headers;
    this.parsedBody = withBody ? { value: request.body } : undefined;
  }

  /** The client connection's abort signal (queue-mode waits only). */
  signal(): AbortSignal {
    return connectionSignal(this.req.raw.socket, this.reply.raw);
  }
}

function send(reply: FastifyReply, response: HttpResponse): void {
  void reply.code(response.status).headers(response.headers).send(response.body);
}

/** Applies the guard's result: answer (and stop the hook chain), or go on to the next hook. */
function finish(result: GuardResult, facts: FastifyFacts): void {
  const { reply, req: request } = facts;
  if (result.kind === 'gone') {
    reply.hijack();
    return;
  }
  if (result.kind === 'respond') {
    send(reply, result.response);
    return;
  }
  const decision = result.decision;
  if (decision !== undefined) {
    for (const name in result.responseFields) void reply.header(name, result.responseFields[name]);
    request.rateLimit = decision;
    if (result.holdsSettlements) releaseWhenDone(decision, request.raw.socket, reply.raw);
  }
  facts.next();
}

const plugin = (fastify: FastifyInstance, options: FastifyRateLimitOptions): Promise<void> => {
  const { limiter, ...rest } = options;
  const guard = new HttpGuard<FastifyRequest>(limiter, rest);
  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', undefined);
  if (options.maxBodyBytes !== undefined) {
    // Fastify parses bodies itself: bound it on the routes whose limiter reads the body (routes registered after the plugin).
    fastify.addHook('onRoute', (route) => {
      const config = route.config?.rateLimit;
      const l = config === false ? false : (config?.limiter ?? limiter);
      if (l !== false && guard.needsBody(l) && (route.bodyLimit === undefined || route.bodyLimit > guard.maxBodyBytes)) route.bodyLimit = guard.maxBodyBytes;
    });
  }
  // Requests whose limiter reads the body: decided in preHandler, with that limiter (per registration of the plugin).
  const bodyLimiters = new WeakMap<FastifyRequest, Limiter>();
  // Whether any request so far had such a limiter (until then preHandler looks nothing up).
  let bodyKeyed = false;
  // Callback hooks, not async ones: no promise per hook, and the request goes on in the same tick as the decision.
  // Limits without body keys decide in onRequest, before any parsing; limits with body keys in preHandler, on the parsed body.
  fastify.addHook('onRequest', (request, reply, done) => {
    let l: Limiter | false;
    try {
      l = routeLimiter(guard, request);
    } catch (error) {
      void guard.fail(error, request).then((result) => {
        if (result.kind === 'respond') send(reply, result.response);
      });
      return;
    }
    if (l === false) {
      done();
      return;
    }
    if (l === guard.limiter) {
      // The common case in one step (no hooks, no header or body reads, nothing to advertise or release).
      const raw = request.raw;
      const quick = guard.quick(peerAddress(raw.socket), raw.method, raw.url);
      if (quick instanceof Unexpected) {
        void guard.fail(quick.error, request).then((result) => {
          if (result.kind === 'respond') send(reply, result.response);
        });
        return;
      }
      if (quick !== undefined) {
        if (goesOnAsIs(quick)) {
          request.rateLimit = quick;
          done();
        } else guard.conclude(quick, new FastifyFacts(request, reply, done, false), finish);
        return;
      }
    }
    if (guard.needsBody(l)) {
      bodyKeyed = true;
      bodyLimiters.set(request, l);
      done();
      return;
    }
    guard.decide(new FastifyFacts(request, reply, done, false), l, finish);
  });
  // Global, so that routes registered before the plugin are covered too; a call (and a lookup once any route read the body) for the others.
  fastify.addHook('preHandler', (request, reply, done) => {
    const l = bodyKeyed ? bodyLimiters.get(request) : undefined;
    if (l === undefined) {
      done();
      return;
    }
    guard.decide(new FastifyFacts(request, reply, done, true), l, finish);
  });
  return Promise.resolve();
};

/**
 * The Fastify plugin (Fastify 4 and 5). Hooks apply to the whole instance (the plugin is not encapsulated):
 *
 * ```ts
 * await app.register(rateLimitPlugin, { limiter, identify: (req) => req.headers['x-user'] as string | undefined });
 * app.post('/otp', { config: { rateLimit: { limiter: otpLimiter } } }, sendOtp);
 * app.get('/health', { config: { rateLimit: false } }, () => 'ok');
 * ```
 *
 * The decision is on `request.rateLimit`. Client addresses come from the socket
 * and this plugin's own `trustProxy`, not from Fastify's `trustProxy`.
 */
export const rateLimitPlugin: FastifyPluginAsync<FastifyRateLimitOptions> = Object.assign(plugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'ratecontract',
});
