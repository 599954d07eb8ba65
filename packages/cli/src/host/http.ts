import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Writes a JSON answer with its length, never cached. */
export function sendJson(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'content-length': String(Buffer.byteLength(text)), 'cache-control': 'no-store' });
  res.end(text);
}

/** Writes an RFC 9457 problem (`application/problem+json`): `{ type: 'about:blank', title, status }`, and `detail` when given. */
export function sendProblem(res: ServerResponse, status: number, title: string, detail?: string): void {
  sendJson(res, status, { type: 'about:blank', title, status, ...(detail !== undefined && { detail }) }, 'application/problem+json');
}

/** 405 with the `Allow` field RFC 9110 section 15.5.6 asks for, and the problem body every server answers it with. */
export function methodNotAllowed(res: ServerResponse, allow: readonly string[]): void {
  res.setHeader('allow', allow.join(', '));
  sendProblem(res, 405, 'Method Not Allowed');
}

/** Writes a short plain-text answer with its length. */
export function sendText(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** `host` as it goes in an authority: IPv6 literals in brackets. */
export function authorityHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** `http://host:port` of a listening server. */
export function origin(server: Server, host: string): string {
  const a = server.address() as AddressInfo;
  return `http://${authorityHost(host)}:${a.port}`;
}

/** Listens; rejects with the listen error (a port in use) instead of emitting it. */
export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Closes a server and every connection it holds; resolves once it is closed. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** A URL with its password hidden, for the logs. */
export function redactUrl(url: string | URL): string {
  try {
    const u = new URL(url.toString());
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable url)';
  }
}

/** An error as one line for a log field. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
