/**
 * A Redis client over HTTP, speaking the Upstash REST protocol on `fetch`
 * alone: a command is a JSON array POSTed to the endpoint with a Bearer
 * token (`["EVALSHA", sha, "1", key, ...]`), answered `{"result": ...}` or
 * `{"error": "..."}`; several commands go to `/pipeline` as an array of
 * arrays, answered by an array of those objects. Commands issued in the same
 * microtask turn are sent together (one `/pipeline` request), so the store's
 * SCRIPT LOADs at startup and checks that overlap share a request.
 *
 * It has the shape of an ioredis client (`evalsha`, `eval`, `script`), so the
 * Redis store drives it unchanged: the same Lua twins by EVALSHA with the
 * NOSCRIPT reload, server time, batching.
 */

/** A `fetch`-compatible function. */
export type FetchLike = (input: string, init: { method: string; headers: Record<string, string>; body: string; signal: AbortSignal }) => Promise<Response>;

/** What the REST client needs. */
export interface RestClientOptions {
  /** The endpoint, `https://...`; commands go to it, pipelines to `<url>/pipeline`. */
  readonly url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token: string;
  /** Default `globalThis.fetch`, read at call time. */
  readonly fetch: FetchLike | undefined;
  /** Each request that carries a script call is aborted after this many ms (`AbortSignal.timeout`). */
  readonly timeoutMs: number;
  /** Each request that carries a SCRIPT LOAD is aborted after this many ms. */
  readonly loadTimeoutMs: number;
}

interface Pending {
  readonly command: readonly string[];
  readonly timeoutMs: number;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

/** An error the server returned for one command (`{"error": ...}`): its message is the server's, so `NOSCRIPT ...` reads as Redis's own. */
export class RestCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestCommandError';
  }
}

/** One reply object of the protocol. */
function replyOf(body: unknown, at: string): { ok: true; value: unknown } | { ok: false; error: Error } {
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const o = body as { result?: unknown; error?: unknown };
    if (typeof o.error === 'string') return { ok: false, error: new RestCommandError(o.error) };
    if ('result' in o) return { ok: true, value: o.result };
  }
  return { ok: false, error: new Error(`redis-http: ${at}: not a reply of the REST protocol: ${JSON.stringify(body)?.slice(0, 200)}`) };
}

export class RestClient {
  /** Read by the Redis store: a REST endpoint is one failure domain, never a Cluster to the client. */
  readonly isCluster = false;
  readonly options = {};
  readonly #o: RestClientOptions;
  readonly #pipelineUrl: string;
  /** Where errors name the endpoint: its origin and path, never the token. */
  readonly #where: string;
  #queue: Pending[] = [];

  constructor(options: RestClientOptions) {
    this.#o = options;
    const base = options.url.replace(/\/+$/, '');
    this.#pipelineUrl = `${base}/pipeline`;
    this.#where = base;
  }

  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown> {
    return this.#send(['EVALSHA', sha, String(numKeys), ...keysAndArgs], this.#o.timeoutMs);
  }

  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown> {
    return this.#send(['EVAL', script, String(numKeys), ...keysAndArgs], this.#o.timeoutMs);
  }

  /** `script('LOAD', text)`, as ioredis: the store's preload and NOSCRIPT reload. */
  script(subcommand: string, ...args: string[]): Promise<unknown> {
    return this.#send(['SCRIPT', subcommand, ...args], this.#o.loadTimeoutMs);
  }

  /** Any command, e.g. `['TIME']` or `['PING']`. */
  command(command: readonly string[]): Promise<unknown> {
    return this.#send(command, this.#o.timeoutMs);
  }

  #send(command: readonly string[], timeoutMs: number): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      this.#queue.push({ command, timeoutMs, resolve, reject });
      if (this.#queue.length === 1) queueMicrotask(() => void this.#flush());
    });
  }

  async #flush(): Promise<void> {
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0) return;
    const single = batch.length === 1;
    const timeoutMs = Math.max(...batch.map((p) => p.timeoutMs));
    const at = single ? `POST ${this.#where}` : `POST ${this.#pipelineUrl} (${batch.length} commands)`;
    const failAll = (error: Error): void => {
      for (const p of batch) p.reject(error);
    };
    let body: unknown;
    let status: number;
    try {
      const fetchFn: FetchLike = this.#o.fetch ?? globalThis.fetch;
      const response = await fetchFn(single ? this.#where : this.#pipelineUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.#o.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(single ? batch[0]?.command : batch.map((p) => p.command)),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = response.status;
      const text = await response.text();
      try {
        body = JSON.parse(text) as unknown;
      } catch {
        throw new Error(`HTTP ${status}, not JSON: ${text.slice(0, 200)}`);
      }
    } catch (error) {
      const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
      failAll(new Error(`redis-http: ${at} ${timedOut ? `did not answer within ${timeoutMs} ms` : `failed: ${error instanceof Error ? error.message : String(error)}`}`, { cause: error }));
      return;
    }
    if (single) {
      const reply = replyOf(body, at);
      const p = batch[0] as Pending;
      if (reply.ok && status >= 200 && status < 300) p.resolve(reply.value);
      else if (!reply.ok && reply.error instanceof RestCommandError && status < 500 && status !== 401 && status !== 403) p.reject(reply.error);
      else p.reject(new Error(`redis-http: ${at}: HTTP ${status}${reply.ok ? '' : `: ${reply.error.message}`}`));
      return;
    }
    if (status < 200 || status >= 300 || !Array.isArray(body) || body.length !== batch.length) {
      const error = !Array.isArray(body) ? replyOf(body, at) : undefined;
      failAll(new Error(`redis-http: ${at}: HTTP ${status}${error !== undefined && !error.ok ? `: ${error.error.message}` : Array.isArray(body) ? `, ${body.length} replies for ${batch.length} commands` : ''}`));
      return;
    }
    batch.forEach((p, i) => {
      const reply = replyOf((body as unknown[])[i], at);
      if (reply.ok) p.resolve(reply.value);
      else p.reject(reply.error);
    });
  }
}
