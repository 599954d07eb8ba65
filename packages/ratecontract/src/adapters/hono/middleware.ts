import type { Context, Env, MiddlewareHandler } from 'hono';
import type { GetConnInfo } from 'hono/conninfo';
import { ConfigError } from '../../core/errors.js';
import type { Limiter } from '../../core/limiter.js';
import type { Decision, RequestContext } from '../../core/types.js';
import { readWebBody, type BodyRead } from '../../http/body.js';
import { HttpGuard, type GuardOptions, type GuardResult, type OptionsArgument } from '../../http/guard.js';
import { releaseOnce } from '../../http/release.js';
import type { HttpResponse } from '../../http/respond.js';

/** Options of `rateLimit`: the shared adapter options, with the Hono context as `req`, plus the address source. */
export interface HonoRateLimitOptions<E extends Env = Env, Ctx = RequestContext> extends GuardOptions<Context<E & { Variables: RateLimitVariables }>, Ctx> {
  /**
   * The runtime's connection-info helper, which gives the socket address:
   * `getConnInfo` from `@hono/node-server/conninfo`, `hono/bun`, `hono/deno`,
   * `hono/cloudflare-workers`... Required when a limit uses the `ip` key,
   * unless `trustProxy` is a hop count.
   */
  readonly getConnInfo?: GetConnInfo | undefined;
}

/** The context variables the middleware sets: `c.get('rateLimit')`. */
export interface RateLimitVariables {
  rateLimit: Decision | undefined;
}

function toResponse(r: HttpResponse): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(r.headers)) if (name !== 'Connection') headers.set(name, value);
  return new Response(r.body ?? null, { status: r.status, headers });
}

/**
 * A rejection (429, 503, 413, shed) as the Response this middleware returns.
 * Hono merges the fields set before it (`c.header`, `c.res.headers`: an
 * earlier middleware's cookies, `Vary`, CORS fields) into the returned
 * Response, the earlier value winning; so the names the contract answers with
 * (`Cache-Control`, `Content-Type`, `Retry-After`, the rate-limit fields)
 * are first removed from them: everything else the application set is kept,
 * and the contract's own fields win.
 */
function rejection(c: Context, r: HttpResponse): Response {
  const response = toResponse(r);
  try {
    // Reading c.res makes the fields set so far (c.header) part of the response Hono merges from.
    const earlier = c.res.headers;
    for (const name of response.headers.keys()) earlier.delete(name);
  } catch {
    // An earlier middleware's immutable Response: Hono's merge applies as it is.
  }
  return response;
}

function headerRecord(h: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  h.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

function pathAndQuery(url: string): string {
  const scheme = url.indexOf('://');
  const slash = scheme < 0 ? url.indexOf('/') : url.indexOf('/', scheme + 3);
  return slash < 0 ? '/' : url.slice(slash);
}

/**
 * Hono middleware over Web-standard Request/Response (any runtime):
 *
 * ```ts
 * import { getConnInfo } from '@hono/node-server/conninfo';
 * app.use(rateLimit(limiter, { getConnInfo }));
 * app.post('/otp', rateLimit(otpLimiter, { getConnInfo }), sendOtp);
 * ```
 *
 * The decision is `c.get('rateLimit')`. Rejections are answered here (429 /
 * 503 / 413, problem+json); anything unexpected becomes a 503 with
 * `Retry-After`, never a 500. Concurrency leases are released when the
 * handler chain returns or the client aborts (the request's signal), exactly once.
 */
export function rateLimit<E extends Env = Env, Ctx extends object = RequestContext>(
  limiter: Limiter<Ctx>,
  ...[options = {}]: OptionsArgument<HonoRateLimitOptions<E, Ctx>, Ctx>
): MiddlewareHandler<E & { Variables: RateLimitVariables }> {
  const { getConnInfo, ...rest } = options;
  if (getConnInfo !== undefined && typeof getConnInfo !== 'function') throw new ConfigError('RC_INVALID_OPTION', 'getConnInfo', `must be a function, got ${typeof getConnInfo}`);
  const guard = new HttpGuard<Context<E & { Variables: RateLimitVariables }>, Ctx>(limiter, rest);
  const hopCount = typeof rest.trustProxy === 'number' && rest.trustProxy > 0;
  if (getConnInfo === undefined && !hopCount && limiter.limits.some((l) => l.keySpec === 'ip')) {
    throw new ConfigError(
      'RC_INVALID_OPTION',
      'getConnInfo',
      "a limit uses the 'ip' key but the middleware has no way to learn the client address: pass the runtime's getConnInfo (e.g. from '@hono/node-server/conninfo')",
    );
  }
  return async (c, next) => {
    const raw = c.req.raw;
    let result: GuardResult;
    let chosen: Limiter | false = false;
    try {
      chosen = guard.select(c);
      // Some runtimes (@hono/node-server) build headers and the abort signal
      // lazily and expensively: touch them only when this limiter needs them.
      const headers = chosen !== false && guard.needsHeaders(chosen) ? headerRecord(raw.headers) : {};
      result = await guard.run(
        {
          req: c,
          remoteAddress: getConnInfo?.(c).remote.address,
          method: raw.method,
          url: pathAndQuery(raw.url),
          headers,
          readBody: async (max: number): Promise<BodyRead> => {
            const current = c.req.raw;
            if (current.bodyUsed) return readWebBody(new Response(await c.req.arrayBuffer()).body, headers, max);
            const read = await readWebBody(current.body, headers, max);
            // The stream is consumed: give the application a request whose body can be read again.
            if (!read.tooLarge && current.body !== null) c.req.raw = new Request(current, { body: read.bytes });
            return read;
          },
          signal: () => raw.signal,
        },
        chosen,
      );
    } catch (error) {
      result = await guard.fail(error, c);
    }
    if (result.kind === 'gone') return new Response(null, { status: 499 });
    if (result.kind === 'respond') return rejection(c, result.response);
    const fields = Object.entries(result.responseFields);
    for (const [name, value] of fields) c.header(name, value);
    const decision = result.decision;
    c.set('rateLimit', decision);
    if (decision === undefined) {
      await next();
      addMissing(c, fields);
      return undefined;
    }
    if (chosen === false || !guard.holdsSettlements(chosen)) {
      await next();
      addMissing(c, fields);
      return undefined;
    }
    const signal = raw.signal;
    let status: number | undefined;
    const release = releaseOnce(decision, () => status);
    if (signal.aborted) release();
    else signal.addEventListener('abort', release, { once: true });
    try {
      await next();
      status = c.res.status;
    } finally {
      signal.removeEventListener('abort', release);
      release();
    }
    addMissing(c, fields);
    return undefined;
  };
}

/** A handler that returned its own `Response` skipped the fields set with `c.header`; add them (copying an immutable response). */
function addMissing(c: Context, fields: ReadonlyArray<readonly [string, string]>): void {
  const missing = fields.filter(([name]) => !c.res.headers.has(name));
  if (missing.length === 0) return;
  try {
    for (const [name, value] of missing) c.res.headers.set(name, value);
  } catch {
    const copy = new Response(c.res.body, c.res);
    for (const [name, value] of missing) copy.headers.set(name, value);
    c.res = copy;
  }
}
