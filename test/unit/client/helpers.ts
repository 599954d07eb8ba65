import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../../packages/ratecontract/src/index.js';

/** One request as the scripted server saw it. */
export interface Hit {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** What the scripted server answers to one request. */
export interface Scripted {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Destroy the socket instead of answering (a network error at the client). */
  readonly destroy?: boolean;
  /** Answer only once this settles (the test holds the response back). */
  readonly after?: Promise<void>;
}

export interface ScriptedServer {
  readonly url: string;
  readonly hits: Hit[];
  close(): Promise<void>;
}

/** An HTTP date (IMF-fixdate). */
export function imf(ms: number): string {
  return new Date(ms).toUTCString();
}

/** The same instant as RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`). */
export function rfc850(ms: number): string {
  const d = new Date(ms);
  const days = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
  const [, dd, mon, yyyy, time] = d.toUTCString().split(' ') as [string, string, string, string, string];
  return `${days[d.getUTCDay()] as string}, ${dd}-${mon}-${yyyy.slice(2)} ${time} GMT`;
}

/** The same instant as asctime (`Sun Nov  6 08:49:37 1994`). */
export function asctime(ms: number): string {
  const d = new Date(ms);
  const [wd, dd, mon, yyyy, time] = d.toUTCString().split(' ') as [string, string, string, string, string];
  const day = String(Number(dd)).padStart(2, ' ');
  return `${wd.slice(0, 3)} ${mon} ${day} ${time} ${yyyy}`;
}

/**
 * A node:http server on 127.0.0.1 that answers request n (0-based) with
 * `script(n, hit)`. Every connection is closed with the server.
 */
export async function scriptedServer(script: (n: number, hit: Hit) => Scripted): Promise<ScriptedServer> {
  const hits: Hit[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const hit: Hit = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const n = hits.length;
      hits.push(hit);
      const answer = script(n, hit);
      if (answer.destroy === true) {
        req.socket.destroy();
        return;
      }
      const write = (): void => {
        res.statusCode = answer.status;
        for (const [k, v] of Object.entries(answer.headers ?? {})) res.setHeader(k, v);
        res.end(answer.body ?? '');
      };
      if (answer.after === undefined) write();
      else void answer.after.then(write);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Virtual time for one request at a time: `sleep` records the wait and moves
 * the clock by it at once (no test ever sleeps).
 */
export class Virtual {
  now: number;
  readonly waits: number[] = [];
  readonly clock: Clock;

  constructor(start = Date.UTC(2026, 11, 1, 9, 0, 0)) {
    this.now = start;
    this.clock = { now: () => this.now };
  }

  readonly sleep = (ms: number): Promise<void> => {
    this.waits.push(ms);
    this.now += ms;
    return Promise.resolve();
  };
}

/** A pending wait of a `Held` sleep. */
export interface PendingWait {
  readonly ms: number;
  release(): void;
}

/**
 * Virtual time for concurrent requests: `sleep` parks until the test
 * releases it, so the test decides what happens while a request waits.
 * `next()` resolves with the next wait that is parked.
 */
export class Held {
  now: number;
  readonly clock: Clock;
  readonly parked: PendingWait[] = [];
  #waiters: Array<(w: PendingWait) => void> = [];

  constructor(start = Date.UTC(2026, 11, 1, 9, 0, 0)) {
    this.now = start;
    this.clock = { now: () => this.now };
  }

  readonly sleep = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const w: PendingWait = { ms, release: resolve };
      const waiter = this.#waiters.shift();
      if (waiter !== undefined) waiter(w);
      else this.parked.push(w);
    });

  next(): Promise<PendingWait> {
    const w = this.parked.shift();
    if (w !== undefined) return Promise.resolve(w);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}

/** A random source that returns the given values in turn (then the last one forever). */
export function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)] as number;
}

/** Resolves once `ready()` is true, checking after each turn of the event loop (no timer, no threshold). */
export async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise<void>((resolve) => setImmediate(resolve));
}
