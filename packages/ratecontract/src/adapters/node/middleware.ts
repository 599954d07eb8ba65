/// <reference types="node" preserve="true" />
// The declarations of this file name node:http's and node:net's types: the
// directive (kept in the emitted .d.ts) loads @types/node for a consumer
// whose tsconfig loads no @types by itself (`types: []`, the `tsc --init`
// default of TypeScript 5.9 and 7). @types/node is an optional peer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Limiter } from '../../core/limiter.js';
import type { Decision } from '../../core/types.js';
import { readNodeBody, type BodyRead } from '../../http/body.js';
import { goesOnAsIs, HttpGuard, Unexpected, type GuardOptions, type GuardResult, type OptionsArgument, type RequestFacts } from '../../http/guard.js';
import type { RequestContext } from '../../core/types.js';
import { parseJsonBody } from '../../http/body.js';
import { addFields, connectionSignal, peerAddress, releaseWhenDone, writeResponse } from '../../http/node-connection.js';

/** Options of `createGuard`: the shared adapter options, with the node:http request as `req`. */
export type NodeGuardOptions<Ctx = RequestContext> = GuardOptions<IncomingMessage, Ctx>;

/** A request body the guard read (only when a limit uses a `body.*` key). */
export interface RequestBody {
  /** The bytes as received (at most `maxBodyBytes`). */
  readonly raw: Uint8Array;
  /** The parsed JSON, or `undefined` if it is empty or not JSON. */
  readonly json: unknown;
}

/**
 * `(req, res) => Promise<boolean>`: `true` go on; `false` the response was
 * already sent (or the client left). `guard.now(req, res)` is the same guard
 * answering with a plain boolean when the decision was made at once (an
 * in-process store, nothing to wait for), else with the promise: testing for
 * a boolean first skips a microtask per request.
 */
export interface NodeGuard {
  (req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** The guard, answering with a boolean when it decided at once, else with a promise. */
  now(req: IncomingMessage, res: ServerResponse): boolean | Promise<boolean>;
}

/**
 * Where the decision is kept on the request: a symbol-keyed property (not
 * enumerable by `Object.keys` or `JSON.stringify`). A WeakMap entry per
 * request cost measurably more, in the set and in garbage collection.
 */
const DECISION = Symbol('ratecontract.decision');
const bodies = new WeakMap<IncomingMessage, Uint8Array>();

type WithDecision = IncomingMessage & { [DECISION]?: Decision };

/** The decision the guard made for `req` (for logging), once `createGuard`'s function has resolved `true`. */
export function getDecision(req: IncomingMessage): Decision | undefined {
  return (req as WithDecision)[DECISION];
}

/**
 * The body the guard consumed to read a `body.*` key. The request stream is
 * then already read, so handlers take the body from here.
 */
export function getBody(req: IncomingMessage): RequestBody | undefined {
  const raw = bodies.get(req);
  if (raw === undefined) return undefined;
  return { raw, json: parseJsonBody(raw) };
}


/**
 * One request's facts for the guard. A class rather than a literal with
 * closures: `headers` is read from the request only if a limit needs it
 * (node:http builds `req.headers` on first access), and the result slots let
 * one shared completion function serve every request.
 */
class NodeFacts implements RequestFacts<IncomingMessage> {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly remoteAddress: string | undefined;
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly readBody: ((max: number) => Promise<BodyRead>) | undefined;
  /** The result, when the guard decided before `decide` returned. */
  result: GuardResult | undefined = undefined;
  /** Takes the result when it comes later. */
  settle: ((result: GuardResult) => void) | undefined = undefined;

  constructor(req: IncomingMessage, res: ServerResponse, readBody: boolean) {
    this.req = req;
    this.res = res;
    this.remoteAddress = peerAddress(req.socket);
    this.method = req.method;
    this.url = req.url;
    this.readBody = readBody
      ? async (max: number): Promise<BodyRead> => {
          const read = await readNodeBody(req, max);
          if (!read.tooLarge) bodies.set(req, read.bytes);
          return read;
        }
      : undefined;
  }

  get headers(): IncomingMessage['headers'] {
    return this.req.headers;
  }

  /** The client connection's abort signal (queue-mode waits only). */
  signal(): AbortSignal {
    return connectionSignal(this.req.socket, this.res);
  }
}

/** The guard's completion for every request: keeps the result, or hands it to the waiting promise. */
function complete(result: GuardResult, facts: NodeFacts): void {
  if (facts.settle === undefined) facts.result = result;
  else facts.settle(result);
}

/**
 * After `decide` or `conclude`: applies the result if it came at once, else
 * a promise of it. Anything `applyResult` throws becomes a rejection.
 */
function settled(facts: NodeFacts, req: IncomingMessage, res: ServerResponse): boolean | Promise<boolean> {
  const decided = facts.result;
  if (decided !== undefined) {
    try {
      return applyResult(decided, req, res);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }
  return new Promise<boolean>((resolve, reject) => {
    facts.settle = (result) => {
      try {
        resolve(applyResult(result, req, res));
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    };
  });
}

/**
 * Applies a guard result to a node:http exchange: sends the rejection, or
 * adds the rate-limit fields, records the decision and arranges for its
 * concurrency leases to be released exactly once when the response finishes
 * or the connection closes. Returns whether the request goes on.
 */
export function applyResult(result: GuardResult, req: IncomingMessage, res: ServerResponse): boolean {
  if (result.kind === 'gone') return false;
  if (result.kind === 'respond') {
    writeResponse(res, result.response);
    return false;
  }
  const decision = result.decision;
  if (!res.headersSent) addFields(res, result.responseFields);
  if (decision !== undefined) (req as WithDecision)[DECISION] = decision;
  if (decision !== undefined && result.holdsSettlements) releaseWhenDone(decision, req.socket, res);
  return true;
}

/**
 * A rate-limit guard for node:http. Await it first in the request handler:
 *
 * ```ts
 * const guard = createGuard(limiter, { identify: (req) => principalOf(req) });
 * http.createServer(async (req, res) => {
 *   if (!(await guard(req, res))) return; // 429 / 503 / 413 already sent
 *   res.end('ok');
 * });
 * ```
 *
 * On the memory store (with no `identify` hook, no body key, no queue wait)
 * `guard.now` answers with a boolean at once; a handler that tests for that
 * before awaiting answers without waiting a microtask:
 * `const ok = guard.now(req, res); if (ok === false || (ok !== true && !(await ok))) return;`
 *
 * Never rejects and never answers 500: anything unexpected (a throwing
 * `identify`, an invalid `cost`) is answered 503 with `Retry-After`.
 * For another limiter on another route, create another guard.
 */
export function createGuard<Ctx extends object = RequestContext>(limiter: Limiter<Ctx>, ...[options]: OptionsArgument<NodeGuardOptions<Ctx>, Ctx>): NodeGuard {
  const guard = new HttpGuard<IncomingMessage, Ctx>(limiter, options);
  const now = (req: IncomingMessage, res: ServerResponse): boolean | Promise<boolean> => {
    const quick = guard.quick(peerAddress(req.socket), req.method, req.url);
    if (quick !== undefined) {
      if (quick instanceof Unexpected) return guard.fail(quick.error, req).then((result) => applyResult(result, req, res));
      if (goesOnAsIs(quick)) {
        // Nothing to tell the caller and nothing to release: record the decision and go on.
        (req as WithDecision)[DECISION] = quick;
        return true;
      }
      const facts = new NodeFacts(req, res, false);
      guard.conclude(quick, facts, complete);
      return settled(facts, req, res);
    }
    let chosen: Limiter | false;
    try {
      chosen = guard.select(req);
    } catch (error) {
      return guard.fail(error, req).then((result) => applyResult(result, req, res));
    }
    const facts = new NodeFacts(req, res, chosen !== false && guard.needsBody(chosen));
    guard.decide(facts, chosen, complete);
    return settled(facts, req, res);
  };
  const run = (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const r = now(req, res);
    return typeof r === 'boolean' ? Promise.resolve(r) : r;
  };
  return Object.assign(run, { now });
}
