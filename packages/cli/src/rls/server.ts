import { watch, type FSWatcher } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Logger } from 'pino';
import { Counter, Registry } from 'prom-client';
import { memoryStore, type Limiter, type Store } from 'ratecontract';
import { readNodeBody } from 'ratecontract/http';
import { prometheusMetrics } from 'ratecontract/metrics';
import { auditRls } from './audit.js';
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
  readonly store: Store;
  /** Its name and type, for the logs. */
  readonly storeInfo: { readonly type: 'memory' | 'redis'; readonly url?: string | undefined };
  /** Whether the default store is ready (Redis connected); `readyz` reports it. */
  readonly storeReady: () => boolean;
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

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), 'cache-control': 'no-store' });
  res.end(text);
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function origin(server: Server, host: string): string {
  const a = server.address() as AddressInfo;
  return `http://${host.includes(':') ? `[${host}]` : host}:${a.port}`;
}

/**
 * Starts `ratecontract rls`: the gRPC `RateLimitService` and
 * `grpc.health.v1`, the HTTP `/json` and `/healthcheck` of the reference,
 * and the admin port (`/metrics`, `/contract`, `/healthz`, `/readyz`).
 */
export async function startRls(options: RlsServerOptions): Promise<RunningRls> {
  const log = options.logger;
  const localStore = memoryStore();
  const engineOptions = { store: options.store, localStore, responseHeaders: options.responseHeaders };
  let engine = new RlsEngine(options.config, engineOptions);

  const registry = new Registry();
  const requests = new Counter({ name: 'ratecontract_rls_requests_total', help: 'ShouldRateLimit calls (gRPC and /json) by overall code: ok, over_limit, error.', labelNames: ['code'], registers: [registry] });
  const descriptors = new Counter({
    name: 'ratecontract_rls_descriptors_total',
    help: 'Descriptors answered, by result: within, over, shadow, blocked, unlimited, no_rule, fail_open, degraded.',
    labelNames: ['result'],
    registers: [registry],
  });
  const domainNotFound = new Counter({ name: 'ratecontract_rls_domain_not_found_total', help: 'Requests for a domain no config file defines (answered OK).', registers: [registry] });
  const loadErrors = new Counter({ name: 'ratecontract_config_load_errors_total', help: 'Config loads refused (the running config was kept).', registers: [registry] });
  const reloads = new Counter({ name: 'ratecontract_config_reloads_total', help: 'Config reloads by result (ok, refused).', labelNames: ['result'], registers: [registry] });
  const metrics = prometheusMetrics({ registry, limiters: () => engine.limiters() as unknown as Limiter[] });

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

  let draining = false;
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const done = (): void => {
    inFlight--;
    if (draining && inFlight === 0) drained?.();
  };

  /** Decides one request; the callback gets a response or an error (never a throw). */
  function decide(raw: unknown, answer: (error: RlsServiceError | undefined, response: RlsResponse | undefined) => void): void {
    inFlight++;
    let domain = '';
    const fail = (error: unknown): void => {
      requests.inc({ code: 'error' });
      if (error instanceof RlsServiceError) answer(error, undefined);
      else {
        log.error({ event: 'rls-error', error: error instanceof Error ? error.message : String(error) });
        answer(new RlsServiceError('UNKNOWN', error instanceof Error ? error.message : String(error)), undefined);
      }
      done();
    };
    try {
      const request = requestFrom(raw);
      domain = request.domain;
      const out = engine.decide(request);
      if (out instanceof Promise) {
        out.then(
          (r) => {
            count(r, domain);
            answer(undefined, r);
            done();
          },
          fail,
        );
        return;
      }
      count(out, domain);
      answer(undefined, out);
      done();
    } catch (error) {
      fail(error instanceof TypeError ? new RlsServiceError('UNKNOWN', error.message) : error);
    }
  }

  // gRPC: RateLimitService and grpc.health.v1.
  const protos = loadProtos();
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
  server.addService(protos.rls, {
    ShouldRateLimit: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      decide(call.request, (error, response) => {
        if (error !== undefined) callback({ code: error.grpcCode === 'UNAVAILABLE' ? grpc.status.UNAVAILABLE : grpc.status.UNKNOWN, details: error.message });
        else callback(null, grpcResponse(response as RlsResponse));
      });
    },
  });
  const watchers = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  const healthOf = (service: string): string | undefined => {
    if (service !== '' && service !== RLS_SERVICE) return undefined;
    return draining ? HEALTH_NOT_SERVING : HEALTH_SERVING;
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
  const grpcPort = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${options.host.includes(':') ? `[${options.host}]` : options.host}:${options.grpcPort}`, grpc.ServerCredentials.createInsecure(), (error, port) => (error === null ? resolve(port) : reject(error)));
  });

  // HTTP: the reference's /json and /healthcheck.
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthcheck') {
      if (draining) text(res, 500, 'draining\n');
      else text(res, 200, 'OK');
      return;
    }
    if (path !== '/json') {
      text(res, 404, 'not found\n');
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      text(res, 405, 'method not allowed\n');
      return;
    }
    readNodeBody(req, 1024 * 1024).then(
      (body) => {
        if (body.tooLarge) {
          text(res, 413, 'request body too large\n');
          return;
        }
        let raw: unknown;
        try {
          raw = JSON.parse(Buffer.from(body.bytes).toString('utf8'));
        } catch {
          text(res, 400, 'Bad Request\n');
          return;
        }
        decide(raw, (error, response) => {
          if (error !== undefined || response === undefined) text(res, 400, 'Bad Request\n');
          else json(res, response.overallCode === 'OVER_LIMIT' ? 429 : 200, jsonResponse(response));
        });
      },
      () => text(res, 400, 'Bad Request\n'),
    );
  });
  http.on('clientError', (_e, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
  });

  // Admin: metrics, the rules, liveness and readiness.
  const admin =
    options.adminPort === undefined
      ? undefined
      : createServer((req: IncomingMessage, res: ServerResponse) => {
          const path = (req.url ?? '/').split('?')[0];
          if (req.method !== 'GET' && req.method !== 'HEAD') {
            json(res, 405, { title: 'Method Not Allowed', status: 405 });
            return;
          }
          switch (path) {
            case '/metrics':
              registry.metrics().then(
                (t) => {
                  res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
                  res.end(t);
                },
                (error: unknown) => json(res, 500, { error: error instanceof Error ? error.message : String(error) }),
              );
              return;
            case '/contract':
            case '/rlconfig': {
              // The contract document of docs/metrics.md, as `serve` answers it: rows and findings, then what this server adds.
              const audit = auditRls(engine.config);
              json(res, 200, { files: engine.config.files, domains: [...engine.config.domains.keys()], rows: audit.rules, findings: audit.findings });
              return;
            }
            case '/healthz':
              json(res, 200, { status: 'ok' });
              return;
            case '/readyz': {
              const ready = !draining && options.storeReady();
              json(res, ready ? 200 : 503, { ready, draining, stores: { default: options.storeReady() } });
              return;
            }
            default:
              json(res, 404, { title: 'Not Found', status: 404 });
          }
        });

  try {
    await listen(http, options.httpPort, options.host);
    if (admin !== undefined && options.adminPort !== undefined) await listen(admin, options.adminPort, options.host);
  } catch (error) {
    server.forceShutdown();
    http.close();
    admin?.close();
    metrics.close();
    void engine.close();
    throw error;
  }
  const grpcAddress = `${options.host.includes(':') ? `[${options.host}]` : options.host}:${grpcPort}`;
  const httpUrl = origin(http, options.host);
  const adminUrl = admin === undefined ? undefined : origin(admin, options.host);

  let reloading: Promise<boolean> = Promise.resolve(true);
  // A refused reload is a warning (as in serve): the running config keeps answering, but the change did not happen.
  async function reloadNow(reason: string): Promise<boolean> {
    let config: RlsConfig;
    try {
      config = await loadRlsConfig(options.configPath);
    } catch (error) {
      loadErrors.inc();
      reloads.inc({ result: 'refused' });
      log.warn({ event: 'config-load-error', reason, error: error instanceof Error ? error.message : String(error), kept: engine.config.files });
      return false;
    }
    let next: RlsEngine;
    try {
      next = new RlsEngine(config, engineOptions, engine);
    } catch (error) {
      loadErrors.inc();
      reloads.inc({ result: 'refused' });
      log.warn({ event: 'config-load-error', reason, error: error instanceof Error ? error.message : String(error), kept: engine.config.files });
      return false;
    }
    const previous = engine;
    engine = next;
    // The old limiters' leases go back in the background while the new engine decides.
    void previous.close(next);
    reloads.inc({ result: 'ok' });
    log.info({ event: 'reload', reason, files: config.files.length, domains: config.domains.size, rules: config.rules.length });
    return true;
  }
  function reload(reason: string): Promise<boolean> {
    reloading = reloading.then(() => reloadNow(reason));
    return reloading;
  }

  let watcher: FSWatcher | undefined;
  let debounce: NodeJS.Timeout | undefined;
  if (options.watch) {
    try {
      watcher = watch(options.configPath, { persistent: false }, () => {
        if (debounce !== undefined) clearTimeout(debounce);
        debounce = setTimeout(() => void reload('watch'), 100);
      });
      watcher.on('error', (error) => log.warn({ event: 'watch-error', error: error.message }));
    } catch (error) {
      log.warn({ event: 'watch-error', error: error instanceof Error ? error.message : String(error) });
    }
  }

  let stopping: Promise<void> | undefined;
  function shutdown(reason: string): Promise<void> {
    stopping ??= (async () => {
      draining = true;
      for (const w of watchers) {
        w.write({ status: HEALTH_NOT_SERVING });
        w.end();
      }
      watcher?.close();
      if (debounce !== undefined) clearTimeout(debounce);
      log.info({ event: 'draining', reason, inFlight });
      const idle = inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (drained = resolve));
      await Promise.race([idle, new Promise<void>((resolve) => setTimeout(resolve, options.drainTimeoutMs).unref())]);
      const cut = inFlight;
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
      const closed = new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeAllConnections();
      await closed;
      if (admin !== undefined) {
        admin.closeAllConnections();
        await new Promise<void>((resolve) => admin.close(() => resolve()));
      }
      // Unspent two-tier leases go back before the store closes.
      await engine.close();
      metrics.close();
      await options.closeStore?.();
      log.info({ event: 'stopped', reason, ...(cut > 0 && { cutInFlight: cut }) });
    })();
    return stopping;
  }

  log.info({
    event: 'startup',
    grpc: grpcAddress,
    grpcPort,
    http: httpUrl,
    admin: adminUrl,
    config: options.configPath,
    files: options.config.files.length,
    domains: options.config.domains.size,
    rules: options.config.rules.length,
    store: options.storeInfo.type,
  });
  return { grpcAddress, httpUrl, adminUrl, config: () => engine.config, reload, shutdown };
}
