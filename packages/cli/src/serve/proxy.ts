import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { Pool, type Dispatcher } from 'undici';

/** Hop-by-hop fields (RFC 9110 section 7.6.1, and the older Proxy-Connection): never forwarded, either way. */
const HOP_BY_HOP = new Set(['connection', 'proxy-connection', 'keep-alive', 'te', 'transfer-encoding', 'upgrade']);

/** Problem details of a gateway error. */
function gatewayProblem(status: 502 | 504, detail: string): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    type: 'about:blank',
    title: status === 502 ? 'Bad Gateway' : 'Gateway Timeout',
    status,
    detail,
  });
  return { body, headers: { 'content-type': 'application/problem+json', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store' } };
}

const NO_NAMES: ReadonlySet<string> = new Set();

/** The names a `Connection` field lists (they are hop-by-hop for this message). */
function connectionNames(value: string | string[] | undefined): ReadonlySet<string> {
  if (value === undefined) return NO_NAMES;
  // The common values name only fields that are hop-by-hop anyway.
  if (typeof value === 'string') {
    const v = value.length <= 10 ? value.toLowerCase() : '';
    if (v === 'keep-alive' || v === 'close') return NO_NAMES;
  }
  const out = new Set<string>();
  for (const v of Array.isArray(value) ? value : [value]) {
    for (const t of v.split(',')) {
      const n = t.trim().toLowerCase();
      if (n !== '') out.add(n);
    }
  }
  return out;
}

/** The members of a list field's value: split at the commas outside `<...>` and quoted strings (RFC 9110 section 5.6.1). */
function splitList(value: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '<') depth++;
    else if (c === '>') depth = Math.max(0, depth - 1);
    else if (c === ',' && depth === 0) {
      const member = value.slice(start, i).trim();
      if (member !== '') out.push(member);
      start = i + 1;
    }
  }
  const member = value.slice(start).trim();
  if (member !== '') out.push(member);
  return out;
}

/** Options of `ReverseProxy`. */
export interface ReverseProxyOptions {
  /** The upstream origin, optionally with a base path (`http://127.0.0.1:8080/api`). */
  readonly upstream: URL;
  /** Bound on waiting for the upstream's response headers, and on every pause in a body. */
  readonly timeoutMs: number;
  /** Most connections kept to the upstream. Default 128. */
  readonly connections?: number | undefined;
}

/** What kind of failure a proxied exchange met, for the answer and the log. */
function classify(error: unknown): 'timeout' | 'down' {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' ? 'timeout' : 'down';
}

/** Aborts an exchange whose client went away; never answered, only logged by undici as the cause. */
const CLIENT_GONE = Object.freeze(Object.assign(new Error('the client closed the connection'), { code: 'RC_CLIENT_GONE' }));

/** Where a response keeps its exchange, for `ReverseProxy.abandon`. */
const EXCHANGE = Symbol('ratecontract.exchange');
type WithExchange = ServerResponse & { [EXCHANGE]?: Exchange | undefined };

/** The pseudonym this proxy gives itself in `Via` (RFC 9110 section 7.6.3). */
const VIA_NAME = 'ratecontract';

/**
 * One proxied exchange, as an undici dispatch handler: the upstream's
 * status and fields go to `res` once, its body chunks are written as they
 * come (the upstream is paused while `res` is full), its trailers are
 * added at the end. A client that goes away aborts the upstream request.
 */
class Exchange implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | undefined;
  #paused = false;
  #gone = false;
  #done = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly resolve: () => void,
    private readonly fail: (status: 502 | 504, detail: string) => void,
    private readonly timeoutMs: number,
  ) {
    res.once('close', this.#onClose);
  }

  /** Gives the exchange up at once (the client's request turned out malformed): nothing more is sent upstream or to the client. */
  abandon(): void {
    if (this.#done) return;
    this.#gone = true;
    this.#controller?.abort(CLIENT_GONE);
    this.#finish();
  }

  readonly #onClose = (): void => {
    if (this.res.writableFinished) return;
    this.#gone = true;
    this.#controller?.abort(CLIENT_GONE);
    this.#finish();
  };

  readonly #onDrain = (): void => {
    this.#paused = false;
    this.#controller?.resume();
  };

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    (this.res as WithExchange)[EXCHANGE] = undefined;
    this.res.off('close', this.#onClose);
    this.res.off('drain', this.#onDrain);
    this.resolve();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#gone) controller.abort(CLIENT_GONE);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    const res = this.res;
    if (res.destroyed) {
      controller.abort(CLIENT_GONE);
      return;
    }
    if (statusCode < 200) {
      this.#informational(statusCode, headers);
      return;
    }
    // undici has parsed the field list already (names in lower case, repeated fields as arrays).
    const named = connectionNames(headers.connection);
    const out: string[] = [];
    for (const name in headers) {
      if (HOP_BY_HOP.has(name) || named.has(name)) continue;
      const value = headers[name];
      if (typeof value === 'string') out.push(name, value);
      else if (value !== undefined) for (const v of value) out.push(name, v);
    }
    if (res.getHeaderNames().length === 0) {
      res.writeHead(statusCode, out);
      return;
    }
    // The contract's fields (RateLimit, ...) are set already: each upstream line is added after them, none replaces
    // another (a flat list given to writeHead would be set name by name, keeping only the last of a repeated field).
    for (let i = 0; i < out.length; i += 2) res.appendHeader(out[i] as string, out[i + 1] as string);
    res.writeHead(statusCode);
  }

  /**
   * A 1xx answer before the final one: `103 Early Hints` is passed on to an
   * HTTP/1.1 client (its end-to-end fields, `Link` first; none of the
   * contract's), any other is dropped (`101` comes only through `upgrade`).
   */
  #informational(statusCode: number, headers: IncomingHttpHeaders): void {
    const req = this.res.req;
    if (statusCode !== 103 || req.httpVersionMajor !== 1 || req.httpVersionMinor < 1 || headers.link === undefined) return;
    const named = connectionNames(headers.connection);
    const hints: Record<string, string | string[]> = {};
    for (const name in headers) {
      if (HOP_BY_HOP.has(name) || named.has(name)) continue;
      const value = headers[name];
      if (value === undefined) continue;
      // Node's writer takes each link apart (and refuses a list in one string); other fields as one line.
      hints[name] = name === 'link' ? (typeof value === 'string' ? [value] : value).flatMap(splitList) : typeof value === 'string' ? value : value.join(', ');
    }
    try {
      this.res.writeEarlyHints(hints);
    } catch {
      // A Link value Node's writer does not take: the hints are dropped, the final answer goes on.
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#gone) return;
    if (!this.res.write(chunk) && !this.#paused) {
      this.#paused = true;
      controller.pause();
      this.res.once('drain', this.#onDrain);
    }
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    if (this.#gone) return;
    const names = Object.keys(trailers);
    if (names.length > 0) {
      const t: Record<string, string> = {};
      for (const n of names) {
        const v = trailers[n];
        if (v !== undefined) t[n] = Array.isArray(v) ? v.join(', ') : v;
      }
      this.res.addTrailers(t);
    }
    this.res.end();
    this.#finish();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (!this.#gone) {
      const kind = classify(error);
      this.fail(kind === 'timeout' ? 504 : 502, kind === 'timeout' ? `the upstream did not answer within ${this.timeoutMs} ms` : 'the upstream could not be reached');
    }
    this.#finish();
  }
}

/**
 * A streaming reverse proxy to one upstream over a keep-alive pool (undici):
 * bodies are streamed both ways, hop-by-hop fields are dropped, the
 * forwarding fields are added, and the upstream's status, fields and
 * trailers are passed back. `Upgrade` requests are piped as raw sockets.
 */
export class ReverseProxy {
  readonly #pool: Pool;
  readonly #upstream: URL;
  readonly #base: string;
  readonly #timeoutMs: number;
  readonly #tunnels = new Set<Duplex>();

  constructor(options: ReverseProxyOptions) {
    this.#upstream = options.upstream;
    this.#base = options.upstream.pathname.replace(/\/+$/, '');
    this.#timeoutMs = options.timeoutMs;
    this.#pool = new Pool(options.upstream.origin, {
      connections: options.connections ?? 128,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: { timeout: options.timeoutMs },
      keepAliveTimeout: 4_000,
    });
  }

  /** The request's fields as sent upstream: flat name/value pairs, without hop-by-hop fields, with the forwarding fields. */
  #requestHeaders(req: IncomingMessage, upgrade: boolean): string[] {
    const named = connectionNames(req.headers.connection);
    const out: string[] = [];
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      const lower = name.toLowerCase();
      if (HOP_BY_HOP.has(lower) || named.has(lower)) continue;
      // Host is the upstream's (the client's is in X-Forwarded-Host); undici refuses Expect (Node answered 100-continue already).
      if (lower === 'host' || lower === 'expect' || lower === 'via' || lower === 'x-forwarded-for' || lower === 'x-forwarded-proto' || lower === 'x-forwarded-host') continue;
      out.push(name, raw[i + 1] as string);
    }
    // A gateway adds itself to Via on every request it forwards (RFC 9110 section 7.6.3).
    const via = req.headers.via;
    const hop = `${req.httpVersion} ${VIA_NAME}`;
    out.push('via', via === undefined || via === '' ? hop : `${via}, ${hop}`);
    const prior = req.headers['x-forwarded-for'];
    const peer = req.socket.remoteAddress ?? 'unknown';
    out.push('x-forwarded-for', prior === undefined || prior === '' ? peer : `${Array.isArray(prior) ? prior.join(', ') : prior}, ${peer}`);
    out.push('x-forwarded-proto', 'http');
    if (req.headers.host !== undefined) out.push('x-forwarded-host', req.headers.host);
    if (upgrade) {
      out.push('connection', 'upgrade');
      if (req.headers.upgrade !== undefined) out.push('upgrade', req.headers.upgrade);
    }
    return out;
  }

  #path(req: IncomingMessage): string {
    const url = req.url ?? '/';
    return this.#base + (url.startsWith('/') ? url : `/${url}`);
  }

  /**
   * Forwards one request. `body` is the request body when something already
   * read it (a limit keyed on `body.*`), else the request stream is piped.
   * Never rejects: failures are answered 502 or 504 when nothing was sent
   * yet, else the client connection is cut.
   *
   * It drives undici's dispatcher directly rather than `pool.request()`: the
   * upstream's body goes chunk by chunk into `res` (pausing the upstream
   * while `res` is full), with no intermediate stream or AbortController per
   * request.
   */
  forward(req: IncomingMessage, res: ServerResponse, body: Uint8Array | undefined): Promise<void> {
    const hasBody = body !== undefined || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
    const headers = this.#requestHeaders(req, false);
    let requestBody: Uint8Array | IncomingMessage | null = null;
    if (body !== undefined) {
      requestBody = body;
      // The bytes the guard read: their own length (the client's framing field is gone with the stream).
      for (let i = 0; i < headers.length; i += 2) if ((headers[i] as string).toLowerCase() === 'content-length') headers[i + 1] = String(body.byteLength);
    } else if (hasBody) requestBody = req;
    // The client left (or its request was refused) while the limits decided: nothing to forward.
    if (res.destroyed || res.writableEnded || req.socket.destroyed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const exchange = new Exchange(res, resolve, (status, detail) => this.#fail(res, status, detail), this.#timeoutMs);
      (res as WithExchange)[EXCHANGE] = exchange;
      this.#pool.dispatch({ method: req.method ?? 'GET', path: this.#path(req), headers, body: requestBody }, exchange);
    });
  }

  /**
   * Gives up the exchange of `res` at once, if one is in progress: called
   * when Node's parser refuses the rest of the client's request (a malformed
   * chunk in the same read as the head), before undici writes anything upstream.
   */
  abandon(res: ServerResponse): void {
    (res as WithExchange)[EXCHANGE]?.abandon();
  }

  #fail(res: ServerResponse, status: 502 | 504, detail: string): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const p = gatewayProblem(status, detail);
    res.writeHead(status, p.headers);
    res.end(p.body);
  }

  /** Pipes an `Upgrade` request (WebSocket and the like) to the upstream as raw sockets, once the guard let it through. */
  upgrade(req: IncomingMessage, client: Duplex, head: Buffer): void {
    const u = this.#upstream;
    const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
    const host = u.hostname.replace(/^\[|\]$/g, '');
    const upstream: Socket = u.protocol === 'https:' ? tlsConnect({ host, port, servername: host }) : netConnect({ host, port });
    this.#tunnels.add(client);
    let connected = false;
    const timer = setTimeout(() => upstream.destroy(Object.assign(new Error('connect timeout'), { code: 'UND_ERR_CONNECT_TIMEOUT' })), this.#timeoutMs);
    timer.unref();
    const cleanup = (): void => {
      clearTimeout(timer);
      this.#tunnels.delete(client);
      upstream.destroy();
      client.destroy();
    };
    upstream.once('error', (error) => {
      if (!connected && client.writable) {
        const kind = classify(error);
        const p = gatewayProblem(kind === 'timeout' ? 504 : 502, kind === 'timeout' ? 'the upstream did not answer in time' : 'the upstream could not be reached');
        const fields = Object.entries({ ...p.headers, connection: 'close' }).map(([k, v]) => `${k}: ${v}\r\n`).join('');
        client.end(`HTTP/1.1 ${kind === 'timeout' ? '504 Gateway Timeout' : '502 Bad Gateway'}\r\n${fields}\r\n${p.body}`);
        clearTimeout(timer);
        this.#tunnels.delete(client);
        return;
      }
      cleanup();
    });
    client.once('error', cleanup);
    client.once('close', cleanup);
    upstream.once('close', cleanup);
    upstream.once(u.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
      connected = true;
      clearTimeout(timer);
      const fields = this.#requestHeaders(req, true);
      fields.push('host', u.host);
      let text = `${req.method ?? 'GET'} ${this.#path(req)} HTTP/1.1\r\n`;
      for (let i = 0; i < fields.length; i += 2) text += `${fields[i] as string}: ${fields[i + 1] as string}\r\n`;
      upstream.write(text + '\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
  }

  /** Closes the pool and every piped upgrade. */
  async close(): Promise<void> {
    for (const t of this.#tunnels) t.destroy();
    this.#tunnels.clear();
    await this.#pool.close().catch(() => undefined);
  }
}
