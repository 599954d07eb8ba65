import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminHandler } from '../../../packages/cli/src/host/admin-server.js';

/** What the test admin server serves. */
export interface AdminSources {
  readonly contract: () => unknown;
  readonly stats: () => unknown;
  readonly metrics: () => Promise<string>;
  /** `/shadow.json` (default: no shadowed limit). */
  readonly shadow?: () => unknown;
}

export interface AdminTestServer {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The servers' admin handler (`packages/cli/src/host/admin-server.ts`) over
 * the test's sources, on 127.0.0.1 and a free port: `/`, `/stats.json`,
 * `/contract`, `/metrics`, `/shadow.json`, always ready.
 */
export async function startAdminServer(sources: AdminSources): Promise<AdminTestServer> {
  const server: Server = createServer(
    adminHandler({
      registry: { contentType: 'text/plain; version=0.0.4; charset=utf-8', metrics: sources.metrics },
      contract: sources.contract,
      stats: sources.stats,
      shadow: sources.shadow,
      readiness: () => ({ ready: true, draining: false, inFlight: 0, stores: {} }),
    }),
  );
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
