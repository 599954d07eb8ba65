import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { renderAdminPage } from './admin-page.js';
import { errorText, methodNotAllowed, sendJson, sendProblem } from './http.js';

/** What `/readyz` answers: 200 when `ready`, else 503. */
export interface Readiness {
  readonly ready: boolean;
  readonly draining: boolean;
  /** Requests in flight (what a drain waits for). */
  readonly inFlight: number;
  readonly stores: Readonly<Record<string, boolean>>;
}

/** Where the admin port's answers come from, each read at request time. */
export interface AdminSources {
  /** `/metrics` (a prom-client `Registry`). */
  readonly registry: Pick<Registry, 'metrics' | 'contentType'>;
  /** `/contract`: the contract document in force (`{ rows, findings, ... }`, docs/metrics.md). */
  readonly contract: () => unknown;
  /** `/stats.json`: the live page's data (a `StatsSnapshot`). */
  readonly stats: () => unknown;
  /** `/readyz`. */
  readonly readiness: () => Readiness;
  /** `/shadow.json`: the shadow report of every shadowed limit in force (a `ShadowSnapshot`); `{ limits: [] }` when absent. */
  readonly shadow?: (() => unknown) | undefined;
  /** More JSON paths of a front end (rls: `/rlconfig`). */
  readonly routes?: Readonly<Record<string, () => unknown>> | undefined;
}

/** The methods every admin path answers; anything else is 405. */
export const ADMIN_METHODS = ['GET', 'HEAD'] as const;

/**
 * The admin port of every server: `/` (the live page), `/metrics`,
 * `/contract`, `/stats.json`, `/shadow.json`, `/healthz`, `/readyz`, and the front end's
 * own `routes`. `GET` and `HEAD` only (405 with `Allow: GET, HEAD`
 * otherwise), 404 for any other path, both as problem+json; every answer is
 * `Cache-Control: no-store`.
 */
export function adminHandler(sources: AdminSources): (req: IncomingMessage, res: ServerResponse) => void {
  const page = renderAdminPage();
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      methodNotAllowed(res, ADMIN_METHODS);
      return;
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    switch (path) {
      case '/':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-length': String(Buffer.byteLength(page)) });
        res.end(page);
        return;
      case '/metrics':
        sources.registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': sources.registry.contentType, 'cache-control': 'no-store', 'content-length': String(Buffer.byteLength(text)) });
            res.end(text);
          },
          (error: unknown) => sendProblem(res, 500, 'Internal Server Error', errorText(error)),
        );
        return;
      case '/contract':
        sendJson(res, 200, sources.contract());
        return;
      case '/stats.json':
        sendJson(res, 200, sources.stats());
        return;
      case '/shadow.json':
        sendJson(res, 200, sources.shadow === undefined ? { now: Date.now(), limits: [] } : sources.shadow());
        return;
      case '/healthz':
        sendJson(res, 200, { status: 'ok' });
        return;
      case '/readyz': {
        const r = sources.readiness();
        sendJson(res, r.ready ? 200 : 503, r);
        return;
      }
      default: {
        const route = Object.hasOwn(sources.routes ?? {}, path) ? sources.routes?.[path] : undefined;
        if (route !== undefined) sendJson(res, 200, route());
        else sendProblem(res, 404, 'Not Found');
      }
    }
  };
}

/** An admin server (not yet listening) over `sources`. */
export function createAdminServer(sources: AdminSources): Server {
  return createServer(adminHandler(sources));
}
