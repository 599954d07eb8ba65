/// <reference types="node" preserve="true" />
// The declarations of this file name node:http's and node:net's types: the
// directive (kept in the emitted .d.ts) loads @types/node for a consumer
// whose tsconfig loads no @types by itself (`types: []`, the `tsc --init`
// default of TypeScript 5.9 and 7). @types/node is an optional peer.
/** Helpers for node sockets and responses, shared by the node:http, Express and Fastify adapters. */
import type { ServerResponse } from 'node:http';
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
