import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Limiter } from '../../core/limiter.js';
import type { Decision } from '../../core/types.js';
import { isJsonOrUntyped, parseJsonBody, readNodeBody, type BodyRead } from '../../http/body.js';
import { HttpGuard, type GuardOptions, type GuardResult, type OptionsArgument, type RequestFacts } from '../../http/guard.js';
import type { RequestContext } from '../../core/types.js';
import { addFields, connectionSignal, peerAddress, releaseWhenDone, writeResponse } from '../../http/node-connection.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The rate-limit decision for this request, set by `ratecontract/express`. */
      rateLimit?: Decision | undefined;
    }
  }
}

/** Options of `rateLimit`: the shared adapter options, with the Express request as `req`. */
export type ExpressRateLimitOptions<Ctx = RequestContext> = GuardOptions<Request, Ctx>;

function facts(req: Request, res: Response, readBody: boolean): RequestFacts<Request> {
  const parsed = (req as { body?: unknown }).body;
  return {
    req,
    remoteAddress: peerAddress(req.socket),
    method: req.method,
    url: req.originalUrl,
    headers: req.headers,
    parsedBody: parsed === undefined ? undefined : { value: parsed },
    // Read the stream only if no body parser ran and it is JSON (or untyped); other types are left to their parsers.
    readBody:
      readBody && parsed === undefined && isJsonOrUntyped(req.headers)
        ? async (max: number): Promise<BodyRead> => {
            const read = await readNodeBody(req, max);
            // The stream is consumed: hand the parsed body on as express.json() would (body-parser then skips it).
            if (!read.tooLarge) (req as { body?: unknown }).body = parseJsonBody(read.bytes);
            return read;
          }
        : undefined,
    signal: () => connectionSignal(req.socket, res),
  };
}

function apply(result: GuardResult, req: Request, res: Response, next: NextFunction): void {
  if (result.kind === 'gone') return;
  if (result.kind === 'respond') {
    writeResponse(res, result.response);
    return;
  }
  const decision = result.decision;
  addFields(res, result.responseFields);
  if (decision !== undefined) {
    req.rateLimit = decision;
    res.locals['rateLimit'] = decision;
  }
  if (decision !== undefined && result.holdsSettlements) releaseWhenDone(decision, req.socket, res);
  next();
}

/**
 * Express middleware (Express 4.18+ and 5):
 *
 * ```ts
 * app.use(rateLimit(apiLimiter, { identify: (req) => req.get('x-user') }));
 * app.post('/otp', rateLimit(otpLimiter), sendOtp); // another limiter on one route
 * ```
 *
 * The decision is on `req.rateLimit` and `res.locals.rateLimit`. Rejections are
 * answered here (429 / 503 / 413, problem+json); the middleware never calls
 * `next(err)` and never answers 500: anything unexpected becomes a 503 with
 * `Retry-After`. Client addresses come from the socket and this middleware's
 * own `trustProxy`, not from Express's `trust proxy` setting.
 */
export function rateLimit<Ctx extends object = RequestContext>(limiter: Limiter<Ctx>, ...[options]: OptionsArgument<ExpressRateLimitOptions<Ctx>, Ctx>): RequestHandler {
  const guard = new HttpGuard<Request, Ctx>(limiter, options);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    let result: GuardResult;
    try {
      const chosen = guard.select(req);
      result = await guard.run(facts(req, res, chosen !== false && guard.needsBody(chosen)), chosen);
    } catch (error) {
      result = await guard.fail(error, req);
    }
    apply(result, req, res, next);
  };
}
