import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { watch, type FSWatcher } from 'node:fs';
import { createServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, dirname } from 'node:path';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { Counter, Registry } from 'prom-client';
import { CHANNELS, type Limiter, type Store } from 'ratecontract';
import { createGuard, getBody, type NodeGuard } from 'ratecontract/node';
import { auditContract } from '../contract/audit.js';
import { buildRuntime, loadConfig, type ContractRuntime, type RateContractConfig, type RuntimeRoute } from 'ratecontract/config';
import { prometheusMetrics } from 'ratecontract/metrics';
import { renderAdminPage } from './admin-page.js';
import { demoHandler } from './demo.js';
import { usesBody } from 'ratecontract/http';
import { answerClientError, refusalBytes, refuse } from './client-error.js';
import { identifyFrom } from './identify.js';
import { LiveStats } from './live-stats.js';
import { ReverseProxy } from './proxy.js';
import { readTarget } from './request-target.js';
import { DEFAULT_HEADERS_TIMEOUT_MS, MAX_HEADER_BYTES, serverOptions } from './server-options.js';

/** Options of `startService`. */
export interface ServiceOptions {
  /** The contract to run. */
  readonly config: RateContractConfig;
  /** The file it came from: what SIGHUP and `watch` reload. `undefined` for the built-in demo (nothing to reload). */
  readonly configFile?: string | undefined;
  /** Applied to every config before it runs (the first and each reload): `--redis`. */
  readonly transform?: ((config: RateContractConfig) => RateContractConfig) | undefined;
  readonly host: string;
  readonly port: number;
  readonly adminHost: string;
  /** `undefined`: no admin port. */
  readonly adminPort: number | undefined;
  /** Proxy to this upstream; `undefined`: answer with the demo handlers. */
  readonly upstream?: URL | undefined;
  readonly upstreamTimeoutMs: number;
  /** Bound on receiving a request head (`--headers-timeout`); past it 408. Default 10 s. */
  readonly headersTimeoutMs?: number | undefined;
  /** How long startup waits for each store to be ready before it listens anyway (the fail modes decide meanwhile). */
  readonly readyTimeoutMs: number;
  /** How long SIGTERM waits for in-flight requests. */
  readonly drainTimeoutMs: number;
  /** Reload when the config file changes. */
  readonly watch: boolean;
  readonly logger: Logger;
}

/** A running service. */
export interface RunningService {
  /** `http://host:port` of the API (or proxy). */
  readonly url: string;
  /** `http://host:port` of the admin port, or `undefined`. */
  readonly adminUrl: string | undefined;
  /** The contract now in force. */
  config(): RateContractConfig;
  /** Reloads the config file; resolves to whether the new config was taken. */
  reload(reason: string): Promise<boolean>;
  /** Stops accepting, drains in-flight requests (bounded), closes the stores. */
  shutdown(reason: string): Promise<void>;
}

/** One config in force: its runtime, a guard per limited route, and its stores' readiness. */
interface Generation {
  readonly config: RateContractConfig;
  readonly runtime: ContractRuntime;
  readonly guards: Map<RuntimeRoute, NodeGuard>;
  readonly ready: Map<string, boolean>;
}

interface ReadyStore extends Store {
  ready(options?: { readonly timeoutMs?: number | undefined }): Promise<void>;
}

function hasReady(store: Store): store is ReadyStore {
  return typeof (store as Partial<ReadyStore>).ready === 'function';
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable url)';
  }
}

function json(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'content-length': String(Buffer.byteLength(text)), 'cache-control': 'no-store' });
  res.end(text);
}

function origin(server: Server, host: string): string {
  const a = server.address() as AddressInfo;
  return `http://${host.includes(':') ? `[${host}]` : host}:${a.port}`;
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

/**
 * Starts `ratecontract serve`: builds the contract's stores and limiters,
 * waits (bounded) for the stores to be ready, and listens with the API (demo
 * handlers or a reverse proxy) and the admin port.
 */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const log = options.logger;
  const transform = options.transform ?? ((c: RateContractConfig) => c);
  const onRedisError = (store: string, error: unknown): void => {
    throttledLog(`redis:${store}`, () => log.warn({ event: 'store-connection-error', store, error: error instanceof Error ? error.message : String(error) }));
  };

  // Store errors and timeouts can come once per request in an outage: log the first, then a count at most every 5 s per store and reason.
  const throttle = new Map<string, { until: number; suppressed: number }>();
  function throttledLog(key: string, write: (suppressed: number) => void): void {
    const now = Date.now();
    const t = throttle.get(key);
    if (t !== undefined && now < t.until) {
      t.suppressed++;
      return;
    }
    write(t?.suppressed ?? 0);
    throttle.set(key, { until: now + 5_000, suppressed: 0 });
  }
  const onStoreError = (message: unknown): void => {
    const m = message as { store: string; kind: string; reason: string; error: unknown; limits: readonly string[] };
    throttledLog(`store-error:${m.store}:${m.reason}`, (suppressed) =>
      log.warn({
        event: 'store-error',
        store: m.store,
        kind: m.kind,
        reason: m.reason,
        limits: m.limits,
        error: m.error instanceof Error ? m.error.message : m.error === undefined ? undefined : JSON.stringify(m.error),
        ...(suppressed > 0 && { suppressedSinceLast: suppressed }),
      }),
    );
  };
  const onBreaker = (message: unknown): void => {
    const m = message as { store: string; kind: string; from: string; to: string; failureRate: number; calls: number };
    log.warn({ event: 'breaker', store: m.store, kind: m.kind, from: m.from, to: m.to, failureRate: m.failureRate, calls: m.calls });
  };
  subscribe(CHANNELS.storeError, onStoreError);
  subscribe(CHANNELS.breaker, onBreaker);

  async function makeGeneration(config: RateContractConfig, previous: ContractRuntime | undefined): Promise<Generation> {
    const runtime = await buildRuntime(config, { onRedisError, previous });
    const identify = identifyFrom(config.http);
    const guards = new Map<RuntimeRoute, NodeGuard>();
    try {
      for (const r of runtime.routes) {
        if (r.limiter === undefined) continue;
        guards.set(
          r,
          createGuard(r.limiter, {
            ...runtime.guardOptions,
            ...(identify !== undefined && { identify }),
            onUnexpectedError: (error) => log.error({ event: 'guard-error', route: r.config.match, error: error instanceof Error ? error.message : String(error) }),
          }),
        );
      }
    } catch (error) {
      await runtime.close();
      throw error;
    }
    const ready = new Map<string, boolean>();
    const waits: Promise<void>[] = [];
    for (const [name, store] of runtime.stores) {
      if (!hasReady(store)) {
        ready.set(name, true);
        continue;
      }
      ready.set(name, false);
      const def = config.stores[name];
      const started = Date.now();
      // Keeps trying in the background after the bound; readiness flips when it comes.
      store.ready().then(
        () => ready.set(name, true),
        () => undefined,
      );
      waits.push(
        store.ready({ timeoutMs: options.readyTimeoutMs }).then(
          () => {
            ready.set(name, true);
            if (previous === undefined || !reusedStore(previous, name, store)) {
              log.info({ event: 'store', store: name, type: 'redis', url: def?.type === 'redis' ? redactUrl(def.url) : undefined, ready: true, waitedMs: Date.now() - started });
            }
          },
          (error: unknown) =>
            log.warn({
              event: 'store',
              store: name,
              type: 'redis',
              url: def?.type === 'redis' ? redactUrl(def.url) : undefined,
              ready: false,
              waitedMs: Date.now() - started,
              error: error instanceof Error ? error.message : String(error),
              note: 'listening anyway: the fail modes decide until the store is ready',
            }),
        ),
      );
    }
    await Promise.all(waits);
    for (const [name, store] of runtime.stores) {
      if (hasReady(store)) continue;
      if (previous !== undefined && reusedStore(previous, name, store)) continue;
      log.info({ event: 'store', store: name, type: store.kind, ready: true });
    }
    return { config, runtime, guards, ready };
  }

  function reusedStore(previous: ContractRuntime, name: string, store: Store): boolean {
    return previous.stores.get(name) === store;
  }

  let current = await makeGeneration(transform(options.config), undefined);
  const proxy = options.upstream === undefined ? undefined : new ReverseProxy({ upstream: options.upstream, timeoutMs: options.upstreamTimeoutMs });

  const registry = new Registry();
  const reloads = new Counter({ name: 'ratecontract_config_reloads_total', help: 'Config reloads by result (ok, refused).', labelNames: ['result'], registers: [registry] });
  const limitersNow = (): Limiter[] => current.runtime.routes.flatMap((r) => (r.limiter === undefined ? [] : [r.limiter]));
  const metrics = prometheusMetrics({ registry, limiters: limitersNow });
  const stats = new LiveStats();

  let inflight = 0;
  let draining = false;
  let drained: (() => void) | undefined;
  const finished = (): void => {
    inflight--;
    if (draining && inflight === 0) drained?.();
  };

  /** `expectsContinue`: the client sent `Expect: 100-continue` and waits for a 100 before its body. */
  async function handle(req: IncomingMessage, res: ServerResponse, expectsContinue = false): Promise<void> {
    inflight++;
    res.once('close', finished);
    if (draining) res.setHeader('connection', 'close');
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
      if (!draining) res.removeHeader('connection');
      res.writeContinue();
    }
    if (proxy !== undefined) await proxy.forward(req, res, getBody(req)?.raw);
    else demoHandler(req, res, route, getBody(req)?.json);
  }

  async function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    if (proxy === undefined || draining) {
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
      log.error({ event: 'request-error', error: error instanceof Error ? error.message : String(error) });
      if (!res.headersSent) json(res, 502, { type: 'about:blank', title: 'Bad Gateway', status: 502 }, 'application/problem+json');
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

  function admin(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    const gen = current;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      json(res, 405, { type: 'about:blank', title: 'Method Not Allowed', status: 405 }, 'application/problem+json');
      return;
    }
    switch (path) {
      case '/metrics':
        registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
            res.end(text);
          },
          (error: unknown) => json(res, 500, { error: error instanceof Error ? error.message : String(error) }),
        );
        return;
      case '/contract':
        json(res, 200, auditContract(gen.config));
        return;
      case '/healthz':
        json(res, 200, { status: 'ok' });
        return;
      case '/readyz': {
        const stores = Object.fromEntries(gen.ready);
        const ready = !draining && [...gen.ready.values()].every(Boolean);
        json(res, ready ? 200 : 503, { ready, draining, stores });
        return;
      }
      case '/stats.json':
        json(res, 200, stats.snapshot(gen.runtime.routes.flatMap((r) => (r.limiter === undefined ? [] : [{ name: r.config.match, limiter: r.limiter }]))));
        return;
      case '/': {
        const page = renderAdminPage();
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-length': String(Buffer.byteLength(page)) });
        res.end(page);
        return;
      }
      default:
        json(res, 404, { type: 'about:blank', title: 'Not Found', status: 404 }, 'application/problem+json');
    }
  }
  const adminServer = options.adminPort === undefined ? undefined : createServer(admin);

  try {
    await listen(server, options.port, options.host);
    if (adminServer !== undefined) await listen(adminServer, options.adminPort as number, options.adminHost);
  } catch (error) {
    server.close();
    adminServer?.close();
    await current.runtime.close();
    await proxy?.close();
    metrics.close();
    stats.close();
    unsubscribe(CHANNELS.storeError, onStoreError);
    unsubscribe(CHANNELS.breaker, onBreaker);
    throw error;
  }
  const url = origin(server, options.host);
  const adminUrl = adminServer === undefined ? undefined : origin(adminServer, options.adminHost);

  let reloading: Promise<boolean> = Promise.resolve(true);
  function reload(reason: string): Promise<boolean> {
    reloading = reloading.then(() => reloadNow(reason));
    return reloading;
  }
  async function reloadNow(reason: string): Promise<boolean> {
    const file = options.configFile;
    if (draining) return false;
    if (file === undefined) {
      // A refused reload is a warning, as for a bad file: the contract in force keeps running, but the operator's change did not happen.
      log.warn({ event: 'reload', ok: false, reason, error: 'the built-in demo contract has no file to reload' });
      reloads.inc({ result: 'refused' });
      return false;
    }
    let next: Generation;
    try {
      const config = transform(await loadConfig(file));
      next = await makeGeneration(config, current.runtime);
    } catch (error) {
      log.warn({ event: 'reload', ok: false, reason, file, error: error instanceof Error ? error.message : String(error), kept: 'the previous config' });
      reloads.inc({ result: 'refused' });
      return false;
    }
    const old = current;
    current = next;
    const kept = [...next.runtime.stores].filter(([name, s]) => old.runtime.stores.get(name) === s).map(([name]) => name);
    log.info({ event: 'reload', ok: true, reason, file, limits: next.config.compiled.length, routes: next.config.routes.length, keptStores: kept });
    reloads.inc({ result: 'ok' });
    await old.runtime.close();
    return true;
  }

  let watcher: FSWatcher | undefined;
  if (options.watch && options.configFile !== undefined) {
    const file = options.configFile;
    let timer: NodeJS.Timeout | undefined;
    // The folder, not the file: editors and config managers replace the file by renaming a new one over it.
    watcher = watch(dirname(file), (_event, name) => {
      if (name !== null && name !== basename(file)) return;
      clearTimeout(timer);
      timer = setTimeout(() => void reload('watch'), 100);
    });
    // The service keeps running on the contract in force, and SIGHUP still reloads: a warning, as in rls.
    watcher.on('error', (error) => log.warn({ event: 'watch-error', file, error: error.message }));
  }

  let stopping: Promise<void> | undefined;
  function shutdown(reason: string): Promise<void> {
    stopping ??= (async () => {
      draining = true;
      log.info({ event: 'shutdown', reason, inFlight: inflight });
      watcher?.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      adminServer?.close();
      adminServer?.closeAllConnections();
      server.closeIdleConnections();
      if (inflight > 0) {
        await new Promise<void>((resolve) => {
          drained = resolve;
          setTimeout(resolve, options.drainTimeoutMs).unref();
        });
      }
      const cut = inflight;
      server.closeAllConnections();
      for (const socket of upgraded) socket.destroy();
      await proxy?.close();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
      await reloading.catch(() => undefined);
      await current.runtime.close();
      metrics.close();
      stats.close();
      unsubscribe(CHANNELS.storeError, onStoreError);
      unsubscribe(CHANNELS.breaker, onBreaker);
      log.info({ event: 'stopped', reason, ...(cut > 0 && { cutInFlight: cut }) });
    })();
    return stopping;
  }

  log.info({
    event: 'startup',
    url,
    adminUrl,
    mode: proxy === undefined ? 'demo' : 'proxy',
    ...(options.upstream !== undefined && { upstream: redactUrl(options.upstream.toString()) }),
    config: current.config.file,
    limits: current.config.compiled.length,
    routes: current.config.routes.length,
  });
  return { url, adminUrl, config: () => current.config, reload, shutdown };
}
