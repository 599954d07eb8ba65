import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { renderAdminPage } from '../../../packages/cli/src/serve/admin-page.js';

/** What the test admin server serves. */
export interface AdminSources {
  readonly contract: () => unknown;
  readonly stats: () => unknown;
  readonly metrics: () => Promise<string>;
}

export interface AdminTestServer {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A tiny admin server for the page's tests, on 127.0.0.1 and a free port:
 * `/`, `/stats.json`, `/contract`, `/metrics`. (The service builds the real one.)
 */
export async function startAdminServer(sources: AdminSources): Promise<AdminTestServer> {
  const page = renderAdminPage();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string): void => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET') return send(405, 'text/plain', 'method not allowed\n');
    if (path === '/') return send(200, 'text/html; charset=utf-8', page);
    if (path === '/stats.json') return send(200, 'application/json', JSON.stringify(sources.stats()));
    if (path === '/contract') return send(200, 'application/json', JSON.stringify(sources.contract()));
    if (path === '/metrics') {
      sources.metrics().then(
        (text) => send(200, 'text/plain; version=0.0.4', text),
        (error: unknown) => send(500, 'text/plain', String(error)),
      );
      return;
    }
    send(404, 'text/plain', 'not found\n');
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
