import type { Logger } from 'pino';
import type { Store } from 'ratecontract';
import { errorText } from './http.js';

/** A store that connects first (the Redis store): `ready()` resolves once it can answer. */
interface ReadyStore extends Store {
  ready(options?: { readonly timeoutMs?: number | undefined }): Promise<void>;
}

function hasReady(store: Store): store is ReadyStore {
  return typeof (store as Partial<ReadyStore>).ready === 'function';
}

/** One store a server waits for at startup (or a reload). */
export interface StoreToWait {
  readonly name: string;
  readonly store: Store;
  /** Its URL for the `store` line, password hidden; `undefined` for an in-process store. */
  readonly url?: string | undefined;
  /** Write its `store` line (false for a store a reload kept: it was logged when it came). Default true. */
  readonly log?: boolean | undefined;
  /** More fields of its `store` line (rls: `deadlineMs`). */
  readonly fields?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * Waits, bounded by `timeoutMs`, for each store that connects first, and
 * writes one `store` line per store: `{ store, type, url, ready, waitedMs }`,
 * at `warn` with the error when a store is not ready in time. The server
 * listens anyway (the fail modes decide until the store is ready). Resolves
 * to the readiness of every store by name, a map that keeps flipping to
 * `true` in the background as late stores come (what `/readyz` reads).
 */
export async function waitForStores(stores: readonly StoreToWait[], timeoutMs: number, log: Logger): Promise<Map<string, boolean>> {
  const ready = new Map<string, boolean>();
  const waits: Promise<void>[] = [];
  for (const s of stores) {
    const { name, store } = s;
    if (!hasReady(store)) {
      ready.set(name, true);
      continue;
    }
    ready.set(name, false);
    const started = Date.now();
    const line = { event: 'store', store: name, type: store.kind, url: s.url, ...s.fields };
    // Keeps trying in the background after the bound; readiness flips when it comes.
    store.ready().then(
      () => ready.set(name, true),
      () => undefined,
    );
    waits.push(
      store.ready({ timeoutMs }).then(
        () => {
          ready.set(name, true);
          if (s.log !== false) log.info({ ...line, ready: true, waitedMs: Date.now() - started });
        },
        (error: unknown) =>
          log.warn({ ...line, ready: false, waitedMs: Date.now() - started, error: errorText(error), note: 'listening anyway: the fail modes decide until the store is ready' }),
      ),
    );
  }
  await Promise.all(waits);
  for (const s of stores) {
    if (hasReady(s.store) || s.log === false) continue;
    log.info({ event: 'store', store: s.name, type: s.store.kind, ready: true, ...s.fields });
  }
  return ready;
}
