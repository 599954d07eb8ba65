import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Limiter } from '../../core/limiter.js';
import type { Decision } from '../../core/types.js';
import { HttpGuard, type GuardOptions, type GuardResult } from '../../http/guard.js';
import { releaseOnce } from '../../http/release.js';

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

/** Options of `rateLimitPlugin`: the limiter plus the shared adapter options, with the Fastify request as `req`. */
export interface FastifyRateLimitOptions extends GuardOptions<FastifyRequest> {
  readonly limiter: Limiter;
}

function routeLimiter(guard: HttpGuard<FastifyRequest>, request: FastifyRequest): Limiter | false {
  const config = request.routeOptions.config.rateLimit;
  if (config === false) return false;
  if (config?.limiter !== undefined) return config.limiter;
  return guard.select(request);
}

async function handle(guard: HttpGuard<FastifyRequest>, request: FastifyRequest, reply: FastifyReply, limiter: Limiter, withBody: boolean): Promise<FastifyReply | undefined> {
  const raw = request.raw;
  let result: GuardResult;
  try {
    result = await guard.run(
      {
        req: request,
        remoteAddress: raw.socket.remoteAddress,
        method: raw.method,
        url: raw.url,
        headers: request.headers,
        parsedBody: withBody ? { value: request.body } : undefined,
        signal: () => {
          const ac = new AbortController();
          if (raw.socket.destroyed) ac.abort();
          else reply.raw.once('close', () => {
            if (!reply.raw.writableFinished) ac.abort();
          });
          return ac.signal;
        },
      },
      limiter,
    );
  } catch (error) {
    result = await guard.fail(error, request);
  }
  if (result.kind === 'gone') {
    reply.hijack();
    return reply;
  }
  if (result.kind === 'respond') {
    const { status, headers, body } = result.response;
    void reply.code(status).headers(headers).send(body);
    return reply;
  }
  void reply.headers(result.headers);
  const decision = result.decision;
  if (decision !== undefined) request.rateLimit = decision;
  if (decision !== undefined && result.leases) {
    const release = releaseOnce(decision);
    if (raw.socket.destroyed || reply.raw.closed) release();
    else {
      reply.raw.once('finish', release);
      reply.raw.once('close', release);
    }
  }
  return undefined;
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
  // Limits without body keys decide in onRequest, before any parsing; limits with body keys in preHandler, on the parsed body.
  fastify.addHook('onRequest', async (request, reply) => {
    let l: Limiter | false;
    try {
      l = routeLimiter(guard, request);
    } catch (error) {
      const result = await guard.fail(error, request);
      if (result.kind === 'respond') void reply.code(result.response.status).headers(result.response.headers).send(result.response.body);
      return reply;
    }
    if (l === false || guard.needsBody(l)) return undefined;
    return handle(guard, request, reply, l, false);
  });
  fastify.addHook('preHandler', async (request, reply) => {
    let l: Limiter | false;
    try {
      l = routeLimiter(guard, request);
    } catch {
      return undefined; // already answered in onRequest
    }
    if (l === false || !guard.needsBody(l)) return undefined;
    return handle(guard, request, reply, l, true);
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
