import type { Logger } from 'pino';
import { errorText } from './http.js';
import type { HostMetrics } from './metrics-registry.js';

/** Options of `createReloader`. */
export interface ReloaderOptions {
  readonly log: Logger;
  readonly metrics: HostMetrics;
  /** The file or folder the config comes from; `undefined`: nothing to reload. */
  readonly configPath: string | undefined;
  /** The `error` of every refused reload when there is no `configPath`. */
  readonly noConfigFile: string;
  /** Loads `configPath` again and swaps it in; resolves to the fields of the `reload` line, throws when refused. */
  readonly reload: (path: string) => Promise<Readonly<Record<string, unknown>>>;
  /** A reload asked for while the server drains is dropped (resolves false, no line). */
  readonly draining: () => boolean;
}

/** Reloads, one at a time, in the order asked. */
export interface Reloader {
  /** Resolves to whether the new config was taken. Never rejects. */
  reload(reason: string): Promise<boolean>;
  /** Resolves once the reloads asked for so far are done. */
  settled(): Promise<void>;
}

/**
 * The reload of every server, whatever asked for it (SIGHUP, the watcher):
 * queued so two never overlap, logged as one `reload` line, `ok: true` at
 * `info` with `reason`, `config` and the front end's fields, or `ok: false`
 * at `warn` with the one-line `error` and `kept: 'the previous config'`, and
 * counted in `ratecontract_config_reloads_total{result}` (a config that
 * failed to load also in `ratecontract_config_load_errors_total`). A
 * refused reload is a warning: the contract in force keeps running, so
 * nothing failed, but the change the operator asked for did not happen.
 */
export function createReloader(options: ReloaderOptions): Reloader {
  const { log, metrics } = options;
  let queue: Promise<boolean> = Promise.resolve(true);
  async function now(reason: string): Promise<boolean> {
    if (options.draining()) return false;
    const path = options.configPath;
    if (path === undefined) {
      log.warn({ event: 'reload', ok: false, reason, error: options.noConfigFile, kept: 'the previous config' });
      metrics.reloaded('refused');
      return false;
    }
    let fields: Readonly<Record<string, unknown>>;
    try {
      fields = await options.reload(path);
    } catch (error) {
      log.warn({ event: 'reload', ok: false, reason, config: path, error: errorText(error), kept: 'the previous config' });
      metrics.reloaded('refused');
      metrics.loadFailed();
      return false;
    }
    log.info({ event: 'reload', ok: true, reason, config: path, ...fields });
    metrics.reloaded('ok');
    return true;
  }
  return {
    reload(reason) {
      queue = queue.then(
        () => now(reason),
        () => now(reason),
      );
      return queue;
    },
    async settled() {
      await queue.catch(() => undefined);
    },
  };
}
