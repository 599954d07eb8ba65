/// <reference types="node" preserve="true" />
// The declarations of this file name node:http's and node:net's types: the
// directive (kept in the emitted .d.ts) loads @types/node for a consumer
// whose tsconfig loads no @types by itself (`types: []`, the `tsc --init`
// default of TypeScript 5.9 and 7). @types/node is an optional peer.
/** Helpers for node sockets and responses, shared by the node:http, Express and Fastify adapters. */
import { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Decision } from '../core/types.js';
import { releaseOnce } from './release.js';
import type { HttpResponse } from './respond.js';

/** Where a socket's peer address is kept once read (not enumerable by `Object.keys` or `JSON.stringify`). */
const PEER = Symbol('ratecontract.peer');

type WithPeer = Socket & { [PEER]?: string };

/**
 * The peer address of a node socket, read once per connection. A TCP
 * connection's peer never changes, and `socket.remoteAddress` is a getter that
 * costs more on each call than the rest of a keep-alive request's address
 * handling; later requests on the connection read the cached value.
 * `undefined` when the socket has no address (already closed): not cached, so
 * a later read tries again.
 */
export function peerAddress(socket: Socket): string | undefined {
  const s = socket as WithPeer;
  let address = s[PEER];
  if (address === undefined) {
    address = socket.remoteAddress;
    if (address !== undefined) {
      try {
        s[PEER] = address;
      } catch {
        // A socket that refuses properties (a proxy): read the getter each time.
      }
    }
  }
  return address;
}

/**
 * An abort signal for a node:http exchange: aborted now if the socket is
 * already destroyed, or when the response closes before it finished (the
 * client left). For the queue-mode wait.
 */
export function connectionSignal(socket: Socket, res: ServerResponse): AbortSignal {
  const ac = new AbortController();
  if (socket.destroyed) ac.abort();
  else res.once('close', () => {
    if (!res.writableFinished) ac.abort();
  });
  return ac.signal;
}

/** Writes a guard's response (`respond`) on a node:http response, unless one was already sent. */
export function writeResponse(res: ServerResponse, response: HttpResponse): void {
  if (res.headersSent || res.destroyed) return;
  res.statusCode = response.status;
  setHeaders(res, response.headers);
  res.end(response.body);
}

/** Sets a guard's fields on a node:http response. */
export function setHeaders(res: ServerResponse, headers: Readonly<Record<string, string>>): void {
  for (const name in headers) res.setHeader(name, headers[name] as string);
}

/** The response's `writeHead` before `addFields` wrapped it. */
const PREVIOUS_WRITE_HEAD = Symbol('ratecontract.writeHead');
type WriteHead = (this: ServerResponse, statusCode: number, ...rest: unknown[]) => ServerResponse;
type Wrapped = ServerResponse & { [PREVIOUS_WRITE_HEAD]?: WriteHead };

/**
 * `writeHead` of a response the guard added fields to. Once any field was
 * set with `setHeader`, Node applies a flat field list given to `writeHead`
 * (`['set-cookie', 'a=1', 'set-cookie', 'b=2']`, the `rawHeaders` form a
 * proxy passes on) name by name with `setHeader`, so a repeated field keeps
 * only its last line. This sets each name of the list once, with all its
 * lines, then calls the original: the list replaces fields of the same
 * names, as an object given to `writeHead` does, and keeps every line.
 */
function writeHeadKeepingRepeats(this: Wrapped, statusCode: number, ...rest: unknown[]): ServerResponse {
  const original = this[PREVIOUS_WRITE_HEAD] ?? (Reflect.get(ServerResponse.prototype, 'writeHead') as WriteHead);
  const fields = rest[rest.length - 1];
  if (!Array.isArray(fields) || fields.length % 2 !== 0 || this.headersSent) return original.call(this, statusCode, ...rest);
  const byName = new Map<string, { name: string; values: string[] }>();
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i] as unknown;
    if (typeof name !== 'string' || name === '') continue;
    const key = name.toLowerCase();
    let entry = byName.get(key);
    if (entry === undefined) {
      entry = { name, values: [] };
      byName.set(key, entry);
    }
    const value = fields[i + 1] as unknown;
    if (Array.isArray(value)) for (const v of value) entry.values.push(String(v));
    else entry.values.push(String(value));
  }
  for (const { name, values } of byName.values()) this.setHeader(name, values.length === 1 ? (values[0] as string) : values);
  return original.call(this, statusCode, ...rest.slice(0, -1));
}

/**
 * Adds a guard's fields to a node:http response the application goes on to
 * write. The application's own fields set before or after are kept, each
 * line of a repeated one (`Set-Cookie`, `Link`, `Vary`) included, whichever
 * way it writes them (`setHeader`, `appendHeader`, or `writeHead` with an
 * object or a flat list); a field it sets with a name of the guard's
 * replaces the guard's, as `setHeader` does.
 */
export function addFields(res: ServerResponse, headers: Readonly<Record<string, string>>): void {
  let added = false;
  for (const name in headers) {
    res.setHeader(name, headers[name] as string);
    added = true;
  }
  if (!added) return;
  // Once per response, over whatever writeHead it has (the prototype's, or a wrapper another middleware installed).
  const current = Reflect.get(res, 'writeHead') as WriteHead;
  if (current === writeHeadKeepingRepeats) return;
  (res as Wrapped)[PREVIOUS_WRITE_HEAD] = current;
  Reflect.set(res, 'writeHead', writeHeadKeepingRepeats);
}

/**
 * Releases `decision`'s leases exactly once when the response is done:
 * `finish` on a completed response, `close` alone on a client abort or a
 * destroyed socket (and at once if it is already gone).
 */
export function releaseWhenDone(decision: Decision, socket: Socket, res: ServerResponse): void {
  // Settled by the status once the response finished; a connection closed before that is an aborted request: a failure.
  const release = releaseOnce(decision, () => (res.writableFinished ? res.statusCode : undefined));
  if (socket.destroyed || res.closed) release();
  else {
    res.once('finish', release);
    res.once('close', release);
  }
}
