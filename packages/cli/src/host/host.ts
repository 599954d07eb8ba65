import type { Logger } from 'pino';
import type { Limiter } from 'ratecontract';
import { createAdminServer } from './admin-server.js';
import { watchConfig, type ConfigWatcher } from './config-watcher.js';
import { closeServer, errorText, listen, origin } from './http.js';
import { InFlight } from './in-flight.js';
import { LiveStats } from './live-stats.js';
import { shadowSnapshot } from './shadow.js';
import { LogThrottle } from './log-throttle.js';
import { createHostMetrics } from './metrics-registry.js';
import { createReloader } from './reloader.js';
import { logStoreEvents } from './store-log.js';
import type { Registry } from 'prom-client';

/** A limiter in force with the name the live page shows it under (a route, a rule). */
export interface NamedLimiter {
  readonly name: string;
  readonly limiter: Limiter;
}

/**
 * What the host gives a front end while it builds (the argument of
 * `startHost`'s `build`), for its whole life.
 */
export interface HostContext {
  /** The server's logger (pino, JSON lines on stdout). */
  readonly log: Logger;
  /** The admin port's registry: register the front end's own series on it. */
  readonly registry: Registry;
  /** Count each request from its arrival to its answer's end (`track(res)`, or `enter`/`leave`): the drain waits for them. */
  readonly inFlight: InFlight;
  /** For log lines that can come once per request (`take(key, write)`): the first, then one per key every 5 s. */
  readonly throttle: LogThrottle;
  /** True from the moment a drain began: answer with `Connection: close`, report not serving. */
  draining(): boolean;
}

/**
 * A front end: what one server is, beyond what every server shares.
 * `serve` (proxy or demo handlers), `rls` (gRPC and `/json` on its engine)
 * and `decide` (forward-auth answers) are each one of these, and keep only
 * their own request handling; the host does the rest.
 *
 * A front end provides:
 * - `contract()`: the contract document in force, `{ rows, findings, ... }`
 *   (docs/metrics.md, The contract document), for `/contract` and the page;
 * - `limiters()`: the limiters in force, named, for `/metrics` and
 *   `/stats.json` (read at each scrape, so a reload shows at once);
 * - `stores()`: each store's readiness, for `/readyz`;
 * - `reload(path)`: load the config again from `path`, build it, swap it in,
 *   and resolve to the fields its `reload` line adds (counts, kept stores);
 *   throw a one-line error to refuse it (the config in force keeps running);
 * - `listen()`: listen on its own ports and resolve to the fields its
 *   `startup` line carries (its URLs, its mode, the config's counts);
 * - `stopAccepting()`: the drain began: stop taking new work (close its
 *   listeners, or report not serving while answering what still comes);
 * - `close()`: the drain is over (nothing in flight, or the bound passed):
 *   cut what is left, close its stores; no reload runs any more.
 * - optionally `adminRoutes`: more JSON paths of its admin port.
 *
 * The host gives it (`HostContext` while it builds, then for its life): the
 * logger, the metrics registry, the in-flight count, the log throttle, and
 * whether it drains. And it does, the same for every front end: the admin
 * port (`/`, `/metrics`, `/contract`, `/stats.json`, `/healthz`, `/readyz`,
 * 405 and 404 as problem+json), the library's metric series and the reload
 * counters, the store-error and breaker log lines, the reload queue with
 * its `reload` lines, the config watcher (one policy: `watchConfig`), the
 * `startup`, `draining` and `stopped` lines, and the drain. The signals are
 * the command's (`holdSignals` in `./signals.ts`): it calls the `Host`'s
 * `reload` and `shutdown`.
 *
 * A `decide` front end, for instance, builds its contract with
 * `buildContractGeneration` (`./contract-runtime.ts`, as serve does: the
 * stores, the readiness wait, the `store` lines; `keptStores` on a
 * reload), answers forward-auth requests on its port calling
 * `inFlight.track(res)` on each, and returns the seven members above:
 * `contract()` is `auditContract(config)`, `stores()` the generation's
 * `ready`, `reload(path)` loads, builds and swaps a generation. Nothing of
 * the admin port, reload queue, watcher, signals or drain is its own.
 */
export interface FrontEnd {
  contract(): unknown;
  limiters(): Iterable<NamedLimiter>;
  stores(): ReadonlyMap<string, boolean>;
  reload(path: string): Promise<Readonly<Record<string, unknown>>>;
  listen(): Promise<Readonly<Record<string, unknown>>>;
  stopAccepting(): void;
  close(): Promise<void>;
  readonly adminRoutes?: Readonly<Record<string, () => unknown>> | undefined;
}

/** Options of `startHost`. */
export interface HostOptions {
  readonly log: Logger;
  /** The file or folder the config came from: what is watched and reloaded. `undefined`: nothing to reload. */
  readonly configPath: string | undefined;
  /** The `error` of a refused reload without `configPath`. Default: `there is no config file to reload`. */
  readonly noConfigFile?: string | undefined;
  /** Reload when the config changes on disk (`watchConfig`). */
  readonly watch: boolean;
  /** Where the admin port listens; `undefined`: no admin port. */
  readonly admin: { readonly host: string; readonly port: number } | undefined;
  /** How long the drain waits for requests in flight. */
  readonly drainTimeoutMs: number;
}

/** A running server. */
export interface Host {
  /** `http://host:port` of the admin port, or `undefined`. */
  readonly adminUrl: string | undefined;
  /** Reloads the config (queued); resolves to whether the new config was taken. */
  reload(reason: string): Promise<boolean>;
  /** Drains (bounded) and stops; the same promise however often it is called. */
  shutdown(reason: string): Promise<void>;
}

/**
 * Runs one front end inside the host: `build` makes it (its contract, its
 * servers, not yet listening), then the front end and the admin port
 * listen, and the `startup` line is written with the front end's fields and
 * `adminUrl`. If anything fails before that, what was opened is closed and
 * the error thrown.
 *
 * The drain (`shutdown`): `draining` line (`reason`, `inFlight`), the
 * watcher stops, `stopAccepting()`, `/readyz` answers 503 with
 * `draining: true` while the admin port stays up, the requests in flight
 * are waited for up to `drainTimeoutMs`, a reload under way finishes,
 * `close()`, the admin port closes, and the `stopped` line
 * (`cutInFlight` when the bound cut requests).
 */
export async function startHost(options: HostOptions, build: (ctx: HostContext) => Promise<FrontEnd>): Promise<Host> {
  const log = options.log;
  const metrics = createHostMetrics();
  const throttle = new LogThrottle();
  const inFlight = new InFlight();
  const stats = new LiveStats();
  let draining = false;
  const unsubscribe = logStoreEvents(log, throttle);
  const release = (): void => {
    stats.close();
    metrics.close();
    unsubscribe();
  };

  let front: FrontEnd;
  try {
    front = await build({ log, registry: metrics.registry, inFlight, throttle, draining: () => draining });
  } catch (error) {
    release();
    throw error;
  }
  const named = (): NamedLimiter[] => [...front.limiters()];
  metrics.bind(() => named().map((n) => n.limiter));
  const admin =
    options.admin === undefined
      ? undefined
      : createAdminServer({
          registry: metrics.registry,
          contract: () => front.contract(),
          stats: () => stats.snapshot(named()),
          shadow: () => shadowSnapshot(named()),
          readiness: () => {
            const stores = front.stores();
            return { ready: !draining && [...stores.values()].every(Boolean), draining, inFlight: inFlight.count, stores: Object.fromEntries(stores) };
          },
          routes: front.adminRoutes,
        });

  let fields: Readonly<Record<string, unknown>>;
  try {
    fields = await front.listen();
    if (admin !== undefined && options.admin !== undefined) await listen(admin, options.admin.port, options.admin.host);
  } catch (error) {
    front.stopAccepting();
    if (admin !== undefined) await closeServer(admin);
    await front.close();
    release();
    throw error;
  }
  const adminUrl = admin === undefined || options.admin === undefined ? undefined : origin(admin, options.admin.host);

  const reloader = createReloader({
    log,
    metrics,
    configPath: options.configPath,
    noConfigFile: options.noConfigFile ?? 'there is no config file to reload',
    reload: (path) => front.reload(path),
    draining: () => draining,
  });

  let watcher: ConfigWatcher | undefined;
  if (options.watch && options.configPath !== undefined) {
    const config = options.configPath;
    watcher = watchConfig(config, {
      onChange: () => void reloader.reload('watch'),
      // The server keeps running on the config in force, and SIGHUP still reloads.
      onError: (error) => log.warn({ event: 'watch-error', config, error: errorText(error) }),
    });
  }

  let stopping: Promise<void> | undefined;
  function shutdown(reason: string): Promise<void> {
    stopping ??= (async () => {
      draining = true;
      log.info({ event: 'draining', reason, inFlight: inFlight.count });
      watcher?.close();
      front.stopAccepting();
      const cut = await inFlight.drain(options.drainTimeoutMs);
      await reloader.settled();
      await front.close();
      if (admin !== undefined) await closeServer(admin);
      release();
      log.info({ event: 'stopped', reason, ...(cut > 0 && { cutInFlight: cut }) });
    })();
    return stopping;
  }

  log.info({ event: 'startup', ...fields, adminUrl });
  return { adminUrl, reload: (reason) => reloader.reload(reason), shutdown };
}
