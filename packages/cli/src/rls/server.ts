import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import { memoryStore, type Limiter, type Store } from 'ratecontract';
import { readNodeBody } from 'ratecontract/http';
import { authorityHost, closeServer, errorText, listen, origin, sendJson, sendText, startHost, type FrontEnd, type HostContext } from '../host/index.js';
import { auditRls } from './rls-audit.js';
import { loadRlsConfig, type RlsConfig } from './config.js';
import { RlsEngine, RlsServiceError, type RlsResponse } from './engine.js';
import { grpcResponse, jsonResponse, requestFrom } from './wire.js';

/** The shipped protos (`proto/` of the package). */
export const PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'proto');

/** Options of `startRls`. */
export interface RlsServerOptions {
  readonly config: RlsConfig;
  /** The file or directory the config came from: what is watched and reloaded. */
  readonly configPath: string;
  /** The default store (memory, or Redis with `--redis`). */
  readonly defaultStore: Store;
  /** Readiness of the default store by name (`default`), flipping as Redis comes: what `/readyz` reports. */
  readonly storesReady: ReadonlyMap<string, boolean>;
  /** The default store's type, for the startup line. */
  readonly storeType: 'memory' | 'redis';
  readonly host: string;
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly adminPort: number | undefined;
  /** Fill `response_headers_to_add`. */
  readonly responseHeaders: boolean;
  /** Reload when the config changes on disk. */
  readonly watch: boolean;
  readonly drainTimeoutMs: number;
  readonly logger: Logger;
  /** Closes what the caller opened for the store (the Redis client) after the servers stopped. */
  readonly closeStore?: (() => Promise<void>) | undefined;
}

/** A running `ratecontract rls`. */
export interface RunningRls {
  /** `host:port` of the gRPC server. */
  readonly grpcAddress: string;
  /** `http://host:port` of `/json` and `/healthcheck`. */
  readonly httpUrl: string;
  readonly adminUrl: string | undefined;
  config(): RlsConfig;
  /** Reloads the config; resolves to whether the new one was taken. */
  reload(reason: string): Promise<boolean>;
  shutdown(reason: string): Promise<void>;
}

const HEALTH_SERVING = 'SERVING';
const HEALTH_NOT_SERVING = 'NOT_SERVING';
const RLS_SERVICE = 'envoy.service.ratelimit.v3.RateLimitService';

function loadProtos(): { rls: grpc.ServiceDefinition; health: grpc.ServiceDefinition } {
  const options: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: false, arrays: true, oneofs: true, includeDirs: [PROTO_DIR] };
  const def = protoLoader.loadSync(['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'], options);
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: { service: grpc.ServiceDefinition } } } } };
    grpc: { health: { v1: { Health: { service: grpc.ServiceDefinition } } } };
  };
  return { rls: pkg.envoy.service.ratelimit.v3.RateLimitService.service, health: pkg.grpc.health.v1.Health.service };
}

/**
 * Starts `ratecontract rls`: the gRPC `RateLimitService` and
 * `grpc.health.v1`, the HTTP `/json` and `/healthcheck` of the reference,
 * on the host (`../host`: the admin port, reloads, the watcher, the drain).
 */
export async function startRls(options: RlsServerOptions): Promise<RunningRls> {
  let front: RlsFrontEnd | undefined;
  const host = await startHost(
    {
      log: options.logger,
      configPath: options.configPath,
      watch: options.watch,
      admin: options.adminPort === undefined ? undefined : { host: options.host, port: options.adminPort },
      drainTimeoutMs: options.drainTimeoutMs,
    },
    (ctx) => Promise.resolve((front = rlsFrontEnd(options, ctx))),
  );
  const rls = front as RlsFrontEnd;
  return { grpcAddress: rls.grpcAddress(), httpUrl: rls.httpUrl(), adminUrl: host.adminUrl, config: () => rls.engine().config, reload: (reason) => host.reload(reason), shutdown: (reason) => host.shutdown(reason) };
}

interface RlsFrontEnd extends FrontEnd {
  engine(): RlsEngine;
  grpcAddress(): string;
  httpUrl(): string;
}

/** The front end of `rls`: its engine, the gRPC server and the HTTP `/json` and `/healthcheck`. */
function rlsFrontEnd(options: RlsServerOptions, ctx: HostContext): RlsFrontEnd {
  const { log, inFlight } = ctx;
  const localStore = memoryStore();
  const engineOptions = { defaultStore: options.defaultStore, localStore, responseHeaders: options.responseHeaders };
  let engine = new RlsEngine(options.config, engineOptions);

  const registry = ctx.registry;
  const requests = new Counter({ name: 'ratecontract_rls_requests_total', help: 'ShouldRateLimit calls (gRPC and /json) by overall code: ok, over_limit, error.', labelNames: ['code'], registers: [registry] });
  const descriptors = new Counter({
    name: 'ratecontract_rls_descriptors_total',
    help: 'Descriptors answered, by result: within, over, shadow, blocked, unlimited, no_rule, fail_open, degraded.',
    labelNames: ['result'],
    registers: [registry],
  });
  const domainNotFound = new Counter({ name: 'ratecontract_rls_domain_not_found_total', help: 'Requests for a domain no config file defines (answered OK).', registers: [registry] });

  // Label children resolved once: the counters are bumped on every call.
  const okCalls = requests.labels('ok');
  const overCalls = requests.labels('over_limit');
  const byResult = new Map<string, { inc(): void }>();
  const resultCounter = (result: string): { inc(): void } => {
    let c = byResult.get(result);
    if (c === undefined) {
      c = descriptors.labels(result.replace('-', '_'));
      byResult.set(result, c);
    }
    return c;
  };
  function count(r: RlsResponse, domain: string): void {
    (r.overallCode === 'OK' ? okCalls : overCalls).inc();
    for (const s of r.statuses) resultCounter(s.result).inc();
    if (!engine.config.domains.has(domain)) domainNotFound.inc();
  }

  /** Decides one request; the callback gets a response or an error (never a throw). */
  function decide(raw: unknown, answer: (error: RlsServiceError | undefined, response: RlsResponse | undefined) => void): void {
    let domain = '';
    const fail = (error: unknown): void => {
      requests.inc({ code: 'error' });
      if (error instanceof RlsServiceError) answer(error, undefined);
      else {
        log.error({ event: 'request-error', error: errorText(error) });
        answer(new RlsServiceError('UNKNOWN', errorText(error)), undefined);
      }
    };
    try {
      const request = requestFrom(raw);
      domain = request.domain;
      const out = engine.decide(request);
      if (out instanceof Promise) {
        out.then((r) => {
          count(r, domain);
          answer(undefined, r);
        }, fail);
        return;
      }
      count(out, domain);
      answer(undefined, out);
    } catch (error) {
      fail(error instanceof TypeError ? new RlsServiceError('UNKNOWN', error.message) : error);
    }
  }

  // gRPC: RateLimitService and grpc.health.v1.
  const protos = loadProtos();
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
  server.addService(protos.rls, {
    ShouldRateLimit: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      inFlight.enter();
      decide(call.request, (error, response) => {
        if (error !== undefined) callback({ code: error.grpcCode === 'UNAVAILABLE' ? grpc.status.UNAVAILABLE : grpc.status.UNKNOWN, details: error.message });
        else callback(null, grpcResponse(response as RlsResponse));
        inFlight.leave();
      });
    },
  });
  const watchers = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  const healthOf = (service: string): string | undefined => {
    if (service !== '' && service !== RLS_SERVICE) return undefined;
    return ctx.draining() ? HEALTH_NOT_SERVING : HEALTH_SERVING;
  };
  server.addService(protos.health, {
    Check: (call: grpc.ServerUnaryCall<{ service?: string }, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const s = healthOf(call.request.service ?? '');
      if (s === undefined) callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
      else callback(null, { status: s });
    },
    Watch: (call: grpc.ServerWritableStream<{ service?: string }, unknown>) => {
      call.write({ status: healthOf(call.request.service ?? '') ?? 'SERVICE_UNKNOWN' });
      watchers.add(call);
      call.on('cancelled', () => watchers.delete(call as grpc.ServerWritableStream<unknown, unknown>));
    },
  });

  // HTTP: the reference's /json and /healthcheck.
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    inFlight.track(res);
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthcheck') {
      if (ctx.draining()) sendText(res, 500, 'draining\n');
      else sendText(res, 200, 'OK');
      return;
    }
    if (path !== '/json') {
      sendText(res, 404, 'not found\n');
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      sendText(res, 405, 'method not allowed\n');
      return;
    }
    readNodeBody(req, 1024 * 1024).then(
      (body) => {
        if (body.tooLarge) {
          sendText(res, 413, 'request body too large\n');
          return;
        }
        let raw: unknown;
        try {
          raw = JSON.parse(Buffer.from(body.bytes).toString('utf8'));
        } catch {
          sendText(res, 400, 'Bad Request\n');
          return;
        }
        decide(raw, (error, response) => {
          if (error !== undefined || response === undefined) sendText(res, 400, 'Bad Request\n');
          else sendJson(res, response.overallCode === 'OVER_LIMIT' ? 429 : 200, jsonResponse(response));
        });
      },
      () => sendText(res, 400, 'Bad Request\n'),
    );
  });
  http.on('clientError', (_e, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
  });

  let grpcAddress = '';
  let httpUrl = '';
  const contract = (): unknown => {
    // The contract document of docs/metrics.md, as `serve` answers it: rows and findings, then what this server adds.
    const audit = auditRls(engine.config);
    return { files: engine.config.files, domains: [...engine.config.domains.keys()], rows: audit.rules, findings: audit.findings };
  };

  return {
    engine: () => engine,
    grpcAddress: () => grpcAddress,
    httpUrl: () => httpUrl,
    contract,
    adminRoutes: { '/rlconfig': contract },
    limiters: () => engine.namedLimiters() as Array<{ name: string; limiter: Limiter }>,
    stores: () => options.storesReady,
    async reload(path) {
      const config = await loadRlsConfig(path);
      const next = new RlsEngine(config, engineOptions, engine);
      const previous = engine;
      engine = next;
      // The old limiters' leases go back in the background while the new engine decides.
      void previous.close(next);
      return { files: config.files.length, domains: config.domains.size, rules: config.rules.length };
    },
    async listen() {
      const grpcPort = await new Promise<number>((resolve, reject) => {
        server.bindAsync(`${authorityHost(options.host)}:${options.grpcPort}`, grpc.ServerCredentials.createInsecure(), (error, port) => (error === null ? resolve(port) : reject(error)));
      });
      grpcAddress = `${authorityHost(options.host)}:${grpcPort}`;
      await listen(http, options.httpPort, options.host);
      httpUrl = origin(http, options.host);
      return {
        url: httpUrl,
        grpc: grpcAddress,
        grpcPort,
        config: options.configPath,
        files: engine.config.files.length,
        domains: engine.config.domains.size,
        rules: engine.config.rules.length,
        store: options.storeType,
      };
    },
    // Envoy moves away on NOT_SERVING (and /healthcheck 500); calls that still come are answered until the drain ends.
    stopAccepting() {
      for (const w of watchers) {
        w.write({ status: HEALTH_NOT_SERVING });
        w.end();
      }
    },
    async close() {
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 1_000);
        force.unref();
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      await closeServer(http);
      // Unspent two-tier allotments go back before the store closes.
      await engine.close();
      await options.closeStore?.();
    },
  };
}
