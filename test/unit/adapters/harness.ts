import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseList, serializeList, type Item } from 'structured-headers';
import { expect } from 'vitest';
import { memoryStore, type Duration, type Limiter, type Store, type StoreOp } from '../../../packages/ratecontract/src/index.js';
import type { Advertise, HeaderShape, TrustProxy } from '../../../packages/ratecontract/src/http/index.js';

/** Adapter-neutral options: each app factory turns them into its adapter's options. */
export interface SuiteOptions {
  readonly advertise?: Advertise;
  readonly fields?: HeaderShape;
  readonly legacyHeaders?: boolean;
  readonly advertiseCapacity?: boolean;
  readonly trustProxy?: TrustProxy;
  readonly forwardedHeader?: 'x-forwarded-for' | 'forwarded';
  readonly ipv6Prefix?: number;
  readonly maxBodyBytes?: number;
  readonly errorRetryAfter?: Duration;
  /** identify(req) = the `x-user` header. */
  readonly identifyHeader?: boolean;
  /** identify(req) throws. */
  readonly identifyThrows?: boolean;
  /** cost(req) = Number(`x-cost` header) when present. */
  readonly costHeader?: boolean;
  readonly delay?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  readonly onUnexpectedError?: (error: unknown) => void;
}

/** Hooks the `/slow` route uses: it calls `started()`, waits for `hold()`, answers, then calls `finished()` last. */
export interface AppHooks {
  readonly started: () => void;
  readonly hold: () => Promise<void>;
  readonly finished: () => void;
}

export interface RunningApp {
  readonly url: string;
  /** The node:http server under the framework (the suite watches its responses end). */
  readonly server: Server;
  close(): Promise<void>;
}

/**
 * Every app has the same routes:
 * - `GET /hello` -> 200 `hello`, header `x-outcome` = the exposed decision's outcome (`none` if none);
 * - `GET /slow` -> `started()`, await `hold()`, 200 `done`, `finished()` as the handler's last step;
 * - `GET /boom` -> the handler throws (the framework answers 500);
 * - `POST /echo` -> 200 JSON `{ body }`, the body as the handler sees it.
 */
export type AppFactory = (limiter: Limiter, options: SuiteOptions, hooks: AppHooks) => Promise<RunningApp>;

export function identifyFrom(options: SuiteOptions): ((get: (name: string) => string | undefined) => string | undefined) | undefined {
  if (options.identifyThrows === true) {
    return () => {
      throw new Error('identity provider down');
    };
  }
  if (options.identifyHeader === true) return (get) => get('x-user');
  return undefined;
}

export function costFrom(options: SuiteOptions): ((get: (name: string) => string | undefined) => number | undefined) | undefined {
  if (options.costHeader !== true) return undefined;
  return (get) => {
    const v = get('x-cost');
    return v === undefined ? undefined : Number(v);
  };
}

/** The shared options that need no translation. */
export function plainOptions(o: SuiteOptions): Omit<SuiteOptions, 'identifyHeader' | 'identifyThrows' | 'costHeader' | 'onUnexpectedError'> {
  const rest: SuiteOptions & Record<string, unknown> = { ...o };
  for (const k of ['identifyHeader', 'identifyThrows', 'costHeader', 'onUnexpectedError']) delete rest[k];
  return rest;
}

/** Listens on 127.0.0.1, port 0. */
export async function listen(server: Server): Promise<RunningApp> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: readonly string[];
  readonly body: string;
}

/** One request with node:http (raw header access, no header normalisation by a fetch implementation). */
export function raw(url: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: string | Buffer; chunked?: boolean } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url + path, { method: init.method ?? 'GET', headers: init.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error(`timeout: ${path}`)));
    if (init.body !== undefined) {
      if (init.chunked === true) {
        const b = Buffer.from(init.body);
        for (let i = 0; i < b.length; i += 1024) req.write(b.subarray(i, i + 1024));
      } else {
        req.write(init.body);
      }
    }
    req.end();
  });
}

/** Starts a request and destroys it once the server handler has started; resolves when the socket is closed. */
export function abortAfterStart(url: string, path: string, started: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest(url + path, { agent: false });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.end();
    void started.then(() => req.destroy());
  });
}

/** Polls `fn` until it returns true, for at most `ms`. */
export async function eventually(fn: () => Promise<boolean>, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A deferred: `promise` settles when `resolve` is called. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A memory store that counts lease releases per lease id, and lets a test await the n-th release. */
export interface CountingStore extends Store {
  /** Release calls per lease id. */
  readonly releases: Map<string, number>;
  /** Resolves once `n` release calls (over all leases) have reached the memory store and it has applied them. */
  released(n: number): Promise<void>;
}

export function countingStore(): CountingStore {
  const inner = memoryStore();
  const releases = new Map<string, number>();
  let applied = 0;
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const wake = (): void => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i] as { n: number; resolve: () => void };
      if (applied >= w.n) {
        waiters.splice(i, 1);
        w.resolve();
      }
    }
  };
  return {
    kind: 'counting-memory',
    releases,
    released: (n) =>
      new Promise<void>((resolve) => {
        waiters.push({ n, resolve });
        wake();
      }),
    evaluate: (ops: readonly StoreOp[], now: number) => inner.evaluate(ops, now),
    refund: (ops: readonly StoreOp[], now: number) => inner.refund(ops, now),
    release: async (op: StoreOp, now: number) => {
      const id = op.leaseId ?? '';
      releases.set(id, (releases.get(id) ?? 0) + 1);
      try {
        await inner.release(op, now);
      } finally {
        applied++;
        wake();
      }
    },
  };
}

/**
 * Watches every exchange on `server`. `settled()` resolves once every
 * response the server has seen so far has emitted 'close' (the last event of
 * a response, after 'finish', and the only one on a client abort), and the
 * event loop has then turned once (`setImmediate`), so every listener of
 * those events and every promise chain they started without I/O or timers
 * has run. No wall-clock wait: it is as fast on an idle machine as on a
 * loaded one, and as sure.
 */
export function watchExchanges(server: Server): { settled(): Promise<void> } {
  let open = 0;
  let waiters: Array<() => void> = [];
  const turn = (): void => {
    const ready = waiters;
    waiters = [];
    setImmediate(() => {
      for (const w of ready) w();
    });
  };
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    open++;
    res.once('close', () => {
      open--;
      if (open === 0) turn();
    });
  });
  return {
    settled: () =>
      new Promise<void>((resolve) => {
        waiters.push(resolve);
        if (open === 0) turn();
      }),
  };
}

/** A store whose every call fails. */
export const failingStore: Store = {
  kind: 'failing',
  evaluate: () => Promise.reject(new Error('store down')),
  refund: () => Promise.reject(new Error('store down')),
  release: () => Promise.reject(new Error('store down')),
};

/** Checks the draft-10 fields of a response: they parse, serialise canonically and agree with each other. */
export function expectConformingFields(h: IncomingHttpHeaders): { policies: Item[]; current: Item[] } {
  const p = h['ratelimit-policy'];
  const c = h['ratelimit'];
  expect(typeof p).toBe('string');
  const policies = parseList(p as string) as Item[];
  expect(serializeList(policies)).toBe(p);
  const names = policies.map((i): unknown => i[0]);
  let current: Item[] = [];
  if (c !== undefined) {
    current = parseList(c as string) as Item[];
    expect(serializeList(current)).toBe(c);
    for (const [name, params] of current) {
      expect(names).toContain(name);
      expect(Number.isSafeInteger(params.get('r'))).toBe(true);
    }
  }
  for (const [name, params] of policies) {
    expect(typeof name).toBe('string');
    const q: unknown = params.get('q');
    const w: unknown = params.get('w');
    expect(Number.isSafeInteger(q) && (q as number) >= 0).toBe(true);
    if (w !== undefined) expect(Number.isSafeInteger(w) && (w as number) >= 1).toBe(true);
  }
  return { policies, current };
}

/** Every header value is printable ASCII (no CR, LF, NUL or other controls) and short. */
export function expectCleanHeaders(r: RawResponse, forbidden: readonly string[]): void {
  for (let i = 0; i < r.rawHeaders.length; i += 2) {
    const name = r.rawHeaders[i] as string;
    const value = r.rawHeaders[i + 1] as string;
    expect(name).toMatch(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/);
    expect(value).toMatch(/^[\x20-\x7e]*$/);
    expect(value.length).toBeLessThan(512);
    for (const f of forbidden) expect(value).not.toContain(f);
  }
  expect(r.headers['set-cookie']).toBeUndefined();
}
