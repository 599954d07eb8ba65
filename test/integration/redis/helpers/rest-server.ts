/**
 * A small server of the Upstash REST protocol that forwards to a real
 * redis-server (the usual shim, SRH, needs Docker): `POST /` takes one
 * command as a JSON array and answers `{"result": ...}` (200) or
 * `{"error": "..."}` (400); `POST /pipeline` takes an array of commands and
 * answers an array of those objects (200), run in order, not atomically (as
 * Upstash's pipelines); a missing or wrong `Authorization: Bearer <token>`
 * gets 401 `{"error": "Unauthorized"}`. It records every request, and can
 * hold answers back (`delayMs`) to test deadlines.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';

export interface RestRequest {
  readonly path: string;
  readonly commands: ReadonlyArray<readonly string[]>;
  /** Whether the client went away (aborted) before the answer. */
  aborted: boolean;
}

export interface RestServer {
  readonly url: string;
  readonly token: string;
  readonly requests: RestRequest[];
  /** Answers are held back this long (ms). */
  delayMs: number;
  close(): Promise<void>;
}

function reply(value: unknown): unknown {
  return { result: value };
}

async function run(redis: Redis, command: readonly unknown[]): Promise<unknown> {
  if (!Array.isArray(command) || command.length === 0 || !command.every((a) => typeof a === 'string' || typeof a === 'number')) return { error: 'ERR a command is a non-empty JSON array of strings' };
  const [name, ...args] = command.map(String) as [string, ...string[]];
  try {
    return reply(await redis.call(name, ...args));
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

export async function startRestServer(redis: Redis, token = 'test-token'): Promise<RestServer> {
  const state: { delayMs: number; requests: RestRequest[] } = { delayMs: 0, requests: [] };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const send = (status: number, body: unknown): void => {
          if (res.destroyed) return;
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (req.method !== 'POST') return send(405, { error: 'ERR POST only' });
        if (req.headers.authorization !== `Bearer ${token}`) return send(401, { error: 'Unauthorized' });
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
        } catch {
          return send(400, { error: 'ERR failed to parse command' });
        }
        const path = (req.url ?? '/').replace(/\?.*$/, '');
        const pipeline = path === '/pipeline';
        if (!pipeline && path !== '/') return send(404, { error: 'ERR unknown path' });
        const commands = (pipeline ? body : [body]) as unknown[][];
        if (!Array.isArray(commands)) return send(400, { error: 'ERR a pipeline is a JSON array of commands' });
        const record: RestRequest = { path, commands: commands as string[][], aborted: false };
        state.requests.push(record);
        res.on('close', () => {
          if (!res.writableFinished) record.aborted = true;
        });
        if (state.delayMs > 0) await new Promise((r) => setTimeout(r, state.delayMs));
        const replies: unknown[] = [];
        for (const c of commands) replies.push(await run(redis, c));
        if (pipeline) return send(200, replies);
        const only = replies[0] as { error?: string };
        return send(only.error === undefined ? 200 : 400, only);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    token,
    requests: state.requests,
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(ms: number) {
      state.delayMs = ms;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
