import { createServer, ServerResponse, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { getBody } from 'ratecontract/node';
import { loadConfig, type RateContractConfig } from 'ratecontract/config';
import { usesBody } from 'ratecontract/http';
import { auditContract } from '../contract/audit.js';
import { errorText, keptStores, listen, origin, redactUrl, sendProblem, startHost, type FrontEnd, type HostContext, type HttpFrontEndOptions, type RunningFrontEnd } from '../host/index.js';
import { answerClientError, refusalBytes, refuse } from './client-error.js';
import { demoHandler } from './demo.js';
import { buildGeneration, namedLimiters, type Generation } from './generation.js';
import { ReverseProxy } from './proxy.js';
import { readTarget } from './request-target.js';
import { DEFAULT_HEADERS_TIMEOUT_MS, MAX_HEADER_BYTES, serverOptions } from './server-options.js';

/** Options of `startService`: the host's (the contract, where to listen, the bounds), and the upstream. */
export interface ServiceOptions extends HttpFrontEndOptions {
  /** Proxy to this upstream; `undefined`: answer with the demo handlers (and `configFile` undefined for the built-in demo: nothing to reload). */
  readonly upstream?: URL | undefined;
  readonly upstreamTimeoutMs: number;
}

/** A running service; `url` is the API (or proxy). */
export type RunningService = RunningFrontEnd;

/**
 * Starts `ratecontract serve`: builds the contract's stores and limiters,
 * waits (bounded) for the stores to be ready, and listens with the API (demo
 * handlers or a reverse proxy); the admin port, reloads and the drain are
 * the host's (`../host`).
 */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  let front: (FrontEnd & { readonly url: string; generation(): Generation }) | undefined;
  const host = await startHost(
    {
      log: options.logger,
      configPath: options.configFile,
      noConfigFile: 'the built-in demo contract has no file to reload',
      watch: options.watch,
      admin: options.adminPort === undefined ? undefined : { host: options.adminHost, port: options.adminPort },
      drainTimeoutMs: options.drainTimeoutMs,
    },
    async (ctx) => (front = await serveFrontEnd(options, ctx)),
  );
  const serving = front as NonNullable<typeof front>;
  return { url: serving.url, adminUrl: host.adminUrl, config: () => serving.generation().config, reload: (reason) => host.reload(reason), shutdown: (reason) => host.shutdown(reason) };
}

/** The front end of `serve`: the API port (demo handlers or the reverse proxy) on the contract in force. */
async function serveFrontEnd(options: ServiceOptions, ctx: HostContext): Promise<FrontEnd & { readonly url: string; generation(): Generation }> {
  const { log, inFlight } = ctx;
  const transform = options.transform ?? ((c: RateContractConfig) => c);
  const build = (config: RateContractConfig, previous: Generation | undefined): Promise<Generation> =>
    buildGeneration(config, { log, throttle: ctx.throttle, previous, readyTimeoutMs: options.readyTimeoutMs });

  let current = await build(transform(options.config), undefined);
  const proxy = options.upstream === undefined ? undefined : new ReverseProxy({ upstream: options.upstream, timeoutMs: options.upstreamTimeoutMs });

  /** `expectsContinue`: the client sent `Expect: 100-continue` and waits for a 100 before its body. */
  async function handle(req: IncomingMessage, res: ServerResponse, expectsContinue = false): Promise<void> {
    inFlight.track(res);
    if (ctx.draining()) res.setHeader('connection', 'close');
    const refused = readTarget(req);
    if (refused !== undefined) {
      refuse(res, refused.status, refused.detail);
      return;
    }
    const gen = current;
    const route = gen.runtime.route(req.method ?? 'GET', req.url ?? '/')?.value;
    const guard = route === undefined ? undefined : gen.guards.get(route);
    // The body is asked for once the limits admit the request (first, when a limit reads the body);
    // a rejected request is answered without it, and its connection closed (the body may still come).
    const continueAfter = expectsContinue && guard !== undefined && route?.limiter !== undefined && !usesBody(route.limiter);
    if (expectsContinue && !continueAfter) res.writeContinue();
    if (continueAfter) res.setHeader('connection', 'close');
    if (guard !== undefined) {
      const ok = guard.now(req, res);
      if (ok === false || (ok !== true && !(await ok))) return;
    }
    if (continueAfter) {
      if (!ctx.draining()) res.removeHeader('connection');
      res.writeContinue();
    }
    if (proxy !== undefined) await proxy.forward(req, res, getBody(req)?.raw);
    else demoHandler(req, res, route, getBody(req)?.json);
  }

  async function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    if (proxy === undefined || ctx.draining()) {
      socket.end('HTTP/1.1 501 Not Implemented\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const refused = readTarget(req);
    if (refused !== undefined) {
      socket.end(refusalBytes(refused.status, refused.detail));
      return;
    }
    const gen = current;
    const route = gen.runtime.route(req.method ?? 'GET', req.url ?? '/')?.value;
    const guard = route === undefined ? undefined : gen.guards.get(route);
    if (guard !== undefined) {
      // The guard answers on a response bound to the upgrade's socket, so a rejected upgrade gets the full client contract.
      const res = new ServerResponse(req);
      res.shouldKeepAlive = false;
      res.assignSocket(socket as never);
      const ok = await guard(req, res);
      if (!ok) {
        if (res.writableFinished) socket.end();
        else res.once('finish', () => socket.end());
        return;
      }
      res.detachSocket(socket as never);
    }
    proxy.upgrade(req, socket, head);
  }

  const run = (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): void => {
    handle(req, res, expectsContinue).catch((error: unknown) => {
      log.error({ event: 'request-error', error: errorText(error) });
      if (!res.headersSent) sendProblem(res, 502, 'Bad Gateway');
      else res.destroy();
    });
  };
  const headersTimeoutMs = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const server = createServer(serverOptions(headersTimeoutMs), (req, res) => run(req, res, false));
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => run(req, res, true));
  const upgraded = new Set<Duplex>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    handleUpgrade(req, socket, head).catch(() => socket.destroy());
  });
  server.on('clientError', (error: Error, socket: Duplex) => {
    answerClientError(error, socket, { headersTimeoutMs, maxHeaderBytes: MAX_HEADER_BYTES }, (res) => proxy?.abandon(res));
  });
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
    async reload(path) {
      const next = await build(transform(await loadConfig(path)), current);
      const old = current;
      current = next;
      await old.runtime.close();
      return { limits: next.config.compiled.length, routes: next.config.routes.length, keptStores: keptStores(next, old) };
    },
    async listen() {
      await listen(server, options.port, options.host);
      url = origin(server, options.host);
      return {
        url,
        mode: proxy === undefined ? 'demo' : 'proxy',
        ...(options.upstream !== undefined && { upstream: redactUrl(options.upstream) }),
        config: current.config.file,
        limits: current.config.compiled.length,
        routes: current.config.routes.length,
      };
    },
    stopAccepting() {
      server.close();
      server.closeIdleConnections();
    },
    async close() {
      server.closeAllConnections();
      for (const socket of upgraded) socket.destroy();
      await proxy?.close();
      if (server.listening) server.close();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
      await current.runtime.close();
    },
  };
}
