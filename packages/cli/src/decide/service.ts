import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { loadConfig, type RateContractConfig } from 'ratecontract/config';
import { HttpGuard, type GuardResult, type RequestFacts } from 'ratecontract/http';
import { auditContract } from '../contract/audit.js';
import { keptStores, listen, origin, sendProblem, startHost, type FrontEnd, type HostContext, type HttpFrontEndOptions, type RunningFrontEnd } from '../host/index.js';
import { answerClientError } from '../serve/client-error.js';
import { buildGeneration, namedLimiters, type Generation } from '../serve/generation.js';
import { DEFAULT_HEADERS_TIMEOUT_MS, MAX_HEADER_BYTES, serverOptions } from '../serve/server-options.js';
import { assertDecidable } from './honour.js';
import { readOriginalRequest } from './original-request.js';

/** The status a denial is answered with when the proxy cannot pass a 429 or 503 on (nginx `auth_request` passes only 401 and 403). */
export type DenyStatus = 401 | 403;

/** The field that carries the contract's own status (429, 503, 403) on every denial, for the proxy to rebuild it. */
export const STATUS_FIELD = 'ratecontract-status';

/** Options of `startDecide`: the host's (the contract, where to listen, the bounds), and the denial status. */
export interface DecideOptions extends HttpFrontEndOptions {
  /** The file the contract came from: what SIGHUP and `watch` reload (checked with `assertDecidable` first). */
  readonly configFile: string;
  /**
   * The status of every denial (`--deny-status`), with the contract's own in
   * `RateContract-Status`; `undefined` answers the contract's 429 or 503
   * itself (Caddy, Traefik, HAProxy pass it on as is).
   */
  readonly denyStatus?: DenyStatus | undefined;
}

/** A running decide; `url` is what the proxy asks. */
export type RunningDecide = RunningFrontEnd;

/** What `/decide.json` on the admin port reports: counts since startup. */
export interface DecideCounts {
  /** TCP connections the proxies opened (few against many subrequests: they keep them alive). */
  connections: number;
  subrequests: number;
  /** Answered 2xx: allowed, or no limit applies. */
  allowed: number;
  /** Answered with a denial (the contract's status, or `--deny-status`). */
  denied: number;
  /** Refused with 400: the subrequest named no original request. */
  unreadable: number;
}

/** One subrequest's facts for the guard: the original method and target, the proxy's address, the original request's fields. */
class SubrequestFacts implements RequestFacts<IncomingMessage> {
  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly remoteAddress: string | undefined,
    readonly method: string,
    readonly url: string,
    readonly headers: IncomingHttpHeaders,
  ) {}
}

/**
 * The original request's fields as the guard reads them. nginx's usual
 * recipe sends the client address in `X-Real-IP`: when the contract reads
 * `X-Forwarded-For` and the subrequest has none, `X-Real-IP` stands in for
 * it. Either is believed only from a proxy in `http.trustProxy` (the guard
 * ignores both otherwise).
 */
function originalHeaders(headers: IncomingHttpHeaders, forwardedHeader: string | undefined): IncomingHttpHeaders {
  if (forwardedHeader === 'forwarded' || headers['x-forwarded-for'] !== undefined) return headers;
  const real = headers['x-real-ip'];
  return typeof real === 'string' && real !== '' ? { ...headers, 'x-forwarded-for': real } : headers;
}

/**
 * Starts `ratecontract decide`: the contract's stores and limiters (built as
 * serve builds them, `buildGeneration`), and a port answering forward-auth
 * subrequests; the admin port, reloads and the drain are the host's.
 */
export async function startDecide(options: DecideOptions): Promise<RunningDecide> {
  let front: (FrontEnd & { readonly url: string; generation(): Generation<HttpGuard<IncomingMessage>> }) | undefined;
  const host = await startHost(
    {
      log: options.logger,
      configPath: options.configFile,
      watch: options.watch,
      admin: options.adminPort === undefined ? undefined : { host: options.adminHost, port: options.adminPort },
      drainTimeoutMs: options.drainTimeoutMs,
    },
    async (ctx) => (front = await decideFrontEnd(options, ctx)),
  );
  const running = front as NonNullable<typeof front>;
  return { url: running.url, adminUrl: host.adminUrl, config: () => running.generation().config, reload: (reason) => host.reload(reason), shutdown: (reason) => host.shutdown(reason) };
}

type DecideGeneration = Generation<HttpGuard<IncomingMessage>>;

async function decideFrontEnd(options: DecideOptions, ctx: HostContext): Promise<FrontEnd & { readonly url: string; generation(): DecideGeneration }> {
  const { log, inFlight } = ctx;
  const transform = options.transform ?? ((c: RateContractConfig) => c);
  const build = (config: RateContractConfig, previous: DecideGeneration | undefined): Promise<DecideGeneration> => {
    const c = transform(config);
    assertDecidable(c);
    return buildGeneration(c, { log, throttle: ctx.throttle, previous, readyTimeoutMs: options.readyTimeoutMs }, (limiter, o) => new HttpGuard<IncomingMessage>(limiter, o));
  };
  let current = await build(options.config, undefined);
  const denyStatus = options.denyStatus;
  const counts: DecideCounts = { connections: 0, subrequests: 0, allowed: 0, denied: 0, unreadable: 0 };

  /** Writes the guard's result as the forward-auth answer. */
  function answer(result: GuardResult, facts: SubrequestFacts): void {
    const res = facts.res;
    if (res.headersSent || res.destroyed) return;
    if (result.kind === 'proceed') {
      counts.allowed++;
      res.writeHead(200, { ...result.responseFields, 'content-length': '0' });
      res.end();
      return;
    }
    if (result.kind === 'gone') {
      res.destroy();
      return;
    }
    counts.denied++;
    const r = result.response;
    // nginx keeps only an auth answer's fields, and does not reuse a connection whose answer body it skipped:
    // with --deny-status (nginx's) a denial has no body, and the proxy's rebuilt answer carries the problem details.
    if (denyStatus !== undefined) {
      const fields: Record<string, string> = { ...r.headers, [STATUS_FIELD]: String(r.status), 'content-length': '0' };
      delete fields['Content-Type'];
      res.writeHead(denyStatus, fields);
      res.end();
      return;
    }
    const body = r.body ?? '';
    res.writeHead(r.status, { ...r.headers, [STATUS_FIELD]: String(r.status), 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    inFlight.track(res);
    counts.subrequests++;
    if (ctx.draining()) res.setHeader('connection', 'close');
    const original = readOriginalRequest(req.headers);
    if (!('method' in original)) {
      counts.unreadable++;
      sendProblem(res, 400, 'Bad Request', original.detail);
      return;
    }
    const gen = current;
    const route = gen.runtime.route(original.method, original.uri)?.value;
    const guard = route === undefined ? undefined : gen.guards.get(route);
    if (guard === undefined) {
      // No route, or `limits: []`: not limited, nothing to tell.
      counts.allowed++;
      res.writeHead(200, { 'content-length': '0' });
      res.end();
      return;
    }
    const headers = originalHeaders(req.headers, gen.config.http.forwardedHeader);
    guard.decide(new SubrequestFacts(req, res, req.socket.remoteAddress, original.method, original.uri, headers), undefined, answer);
  }

  const headersTimeoutMs = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const server = createServer(serverOptions(headersTimeoutMs), handle);
  server.on('connection', () => void counts.connections++);
  server.on('clientError', (error: Error, socket) => answerClientError(error, socket, { headersTimeoutMs, maxHeaderBytes: MAX_HEADER_BYTES }, () => undefined));
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  let url = '';

  return {
    get url() {
      return url;
    },
    generation: () => current,
    contract: () => auditContract(current.config),
    limiters: () => namedLimiters(current),
    stores: () => current.ready,
    adminRoutes: { '/decide.json': () => ({ ...counts, denyStatus: denyStatus ?? null }) },
    async reload(path) {
      const next = await build(await loadConfig(path), current);
      const old = current;
      current = next;
      await old.runtime.close();
      return { limits: next.config.compiled.length, routes: next.config.routes.length, keptStores: keptStores(next, old) };
    },
    async listen() {
      await listen(server, options.port, options.host);
      url = origin(server, options.host);
      return { url, mode: 'decide', ...(denyStatus !== undefined && { denyStatus }), config: current.config.file, limits: current.config.compiled.length, routes: current.config.routes.length };
    },
    stopAccepting() {
      server.close();
      server.closeIdleConnections();
    },
    async close() {
      server.closeAllConnections();
      if (server.listening) server.close();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
      await current.runtime.close();
    },
  };
}
