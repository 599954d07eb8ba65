import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** A status the service answers for the request's own form, before any limit or upstream. */
export type RefusalStatus = 400 | 408 | 413 | 431 | 501;

const REASONS: Readonly<Record<RefusalStatus, string>> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  413: 'Content Too Large',
  431: 'Request Header Fields Too Large',
  501: 'Not Implemented',
};

/** The status for a parse or timeout error of Node's HTTP server (`clientError`), by its code. */
export function clientErrorStatus(code: unknown): 400 | 408 | 413 | 431 {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return 431;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 408;
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return 413;
    default:
      return 400;
  }
}

function problem(status: RefusalStatus, detail: string): string {
  return JSON.stringify({ type: 'about:blank', title: REASONS[status], status, detail });
}

/** Answers `res` with `status` and problem details, and closes the connection after it. */
export function refuse(res: ServerResponse, status: RefusalStatus, detail: string): void {
  if (res.headersSent || res.destroyed) return;
  const body = problem(status, detail);
  res.writeHead(status, { 'content-type': 'application/problem+json', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store', connection: 'close' });
  res.end(body);
}

/** The same answer as raw bytes, for a socket with no response object (a parse error, an upgrade). */
export function refusalBytes(status: RefusalStatus, detail: string): string {
  const body = problem(status, detail);
  return (
    `HTTP/1.1 ${status} ${REASONS[status]}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `cache-control: no-store\r\nconnection: close\r\n\r\n${body}`
  );
}

/** What the bounds were, for the answer's `detail`. */
export interface ClientErrorBounds {
  readonly headersTimeoutMs: number;
  readonly maxHeaderBytes: number;
}

function detailOf(error: { code?: unknown; reason?: unknown }, status: 400 | 408 | 413 | 431, bounds: ClientErrorBounds): string {
  if (status === 431) return `the request head exceeds ${bounds.maxHeaderBytes} bytes`;
  if (status === 408) return `the request did not arrive in time (its head is bounded to ${bounds.headersTimeoutMs} ms)`;
  // The parser's own words name the problem (a fixed text of llhttp, never the client's bytes).
  const reason = typeof error.reason === 'string' && /^[\x20-\x7e]{1,200}$/.test(error.reason) ? `: ${error.reason}` : '';
  return `the request is not valid HTTP/1.1 (RFC 9112)${reason}`;
}

/**
 * The service's `clientError` handler: a request Node's parser refused (bad
 * framing, a head over the bound or too slow) is answered 400, 431 or 408
 * with problem details and the connection closed, unless an answer already
 * started (then the connection is cut). The exchange in progress on the
 * socket, if any, is first abandoned at once (`abandon`), so that a request
 * whose body turned out malformed in the same read is never sent upstream.
 */
export function answerClientError(error: Error & { code?: unknown; reason?: unknown }, socket: Duplex, bounds: ClientErrorBounds, abandon: (res: ServerResponse) => void): void {
  // Node keeps the response being written on the socket as `_httpMessage` (internal, stable since Node 0.x).
  const res = (socket as { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
  if (res !== undefined) abandon(res);
  if (error.code === 'ECONNRESET' || !socket.writable || res?.headersSent === true) {
    socket.destroy();
    return;
  }
  const status = clientErrorStatus(error.code);
  socket.end(refusalBytes(status, detailOf(error, status, bounds)));
  // Closed once written, or after a bound if the peer never reads.
  socket.once('finish', () => socket.destroy());
  setTimeout(() => socket.destroy(), 5_000).unref();
}
