import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseList, serializeList, type Item } from 'structured-headers';
import { expect } from 'vitest';
import { memoryStore, type Duration, type Limiter, type Store, type StoreOp } from '../../src/index.js';
import type { Advertise, HeaderShape, TrustProxy } from '../../src/http/index.js';

/** Adapter-neutral options: each app factory turns them into its adapter's options. */
export interface SuiteOptions {
  readonly advertise?: Advertise;
  readonly headers?: HeaderShape;
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

/** Hooks the `/slow` route uses: it calls `started()` then waits for `hold()`. */
export interface AppHooks {
  readonly started: () => void;
  readonly hold: () => Promise<void>;
}

export interface RunningApp {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Every app has the same routes:
 * - `GET /hello` -> 200 `hello`, header `x-outcome` = the exposed decision's outcome (`none` if none);
 * - `GET /slow` -> `started()`, await `hold()`, 200 `done`;
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

/** A memory store that counts lease releases per lease id. */
export function countingStore(): Store & { releases: Map<string, number> } {
  const inner = memoryStore();
  const releases = new Map<string, number>();
  return {
    kind: 'counting-memory',
    releases,
    evaluate: (ops: readonly StoreOp[], now: number) => inner.evaluate(ops, now),
    refund: (ops: readonly StoreOp[], now: number) => inner.refund(ops, now),
    release: (op: StoreOp, now: number) => {
      const id = op.leaseId ?? '';
      releases.set(id, (releases.get(id) ?? 0) + 1);
      return inner.release(op, now);
    },
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
