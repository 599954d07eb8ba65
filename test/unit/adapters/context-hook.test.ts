/**
 * The adapters' `context(req, base)` hook, with real servers and fetch: the
 * limiter's own context fields come from the request, the hook runs once per
 * request, the base fields (ip) are still there for built-in keys, and a
 * throwing hook is a 503, never a 500.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { createLimiter, type Limiter } from '../../../packages/ratecontract/src/index.js';
import { createGuard } from '../../../packages/ratecontract/src/adapters/node/index.js';
import { rateLimit as expressRateLimit } from '../../../packages/ratecontract/src/adapters/express/index.js';
import { rateLimitPlugin } from '../../../packages/ratecontract/src/adapters/fastify/index.js';
import { rateLimit as honoRateLimit } from '../../../packages/ratecontract/src/adapters/hono/index.js';

interface TenantCtx {
  readonly tenant: string;
  readonly ip?: string | undefined;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function tenantLimiter(): Limiter<TenantCtx> {
  return createLimiter<TenantCtx>({
    limits: [
      { name: 'per-tenant', purpose: 'shedding', algorithm: 'fixed-window', limit: 2, window: '1h', key: (ctx) => ctx.tenant },
      { name: 'per-ip', purpose: 'shedding', algorithm: 'fixed-window', limit: 100, window: '1h', key: 'ip' },
    ],
  });
}

/** The hook every adapter gets: the tenant from a header; throws on `x-tenant: boom`. */
function hookFor(calls: { n: number }): (tenantHeader: string | undefined, base: { ip?: string | undefined }) => TenantCtx {
  return (tenant, base) => {
    calls.n++;
    if (tenant === 'boom') throw new Error('tenant lookup failed');
    return { ...base, tenant: tenant ?? 'none' };
  };
}

function listening(server: Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

type Start = (limiter: Limiter<TenantCtx>, hook: ReturnType<typeof hookFor>) => Promise<string>;

const ADAPTERS: Record<string, Start> = {
  node: async (limiter, hook) => {
    const guard = createGuard(limiter, { context: (req, base) => hook(req.headers['x-tenant'] as string | undefined, base) });
    const server = createServer((req, res) => {
      void guard(req, res).then((go) => go && res.end('ok'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => server.close(() => r())));
    return listening(server);
  },
  express: async (limiter, hook) => {
    const app = express();
    app.use(expressRateLimit(limiter, { context: (req, base) => hook(req.get('x-tenant'), base) }));
    app.get('/', (_req, res) => void res.send('ok'));
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((r) => server.once('listening', r));
    closers.push(() => new Promise((r) => server.close(() => r())));
    return listening(server);
  },
  fastify: async (limiter, hook) => {
    const app = Fastify();
    await app.register(rateLimitPlugin, { limiter, context: (req, base) => hook(req.headers['x-tenant'] as string | undefined, base) });
    app.get('/', () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  },
  hono: async (limiter, hook) => {
    const app = new Hono();
    app.use(honoRateLimit(limiter, { getConnInfo, context: (c, base) => hook(c.req.header('x-tenant'), base) }));
    app.get('/', (c) => c.text('ok'));
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    await new Promise<void>((r) => (server.listening ? r() : server.once('listening', r)));
    closers.push(() => new Promise((r) => server.close(() => r())));
    return listening(server);
  },
};

describe.each(Object.keys(ADAPTERS))('%s: context(req, base)', (name) => {
  it("feeds the limiter's own fields, once per request, beside the base fields; a throwing hook is a 503", async () => {
    const calls = { n: 0 };
    const url = await (ADAPTERS[name] as Start)(tenantLimiter(), hookFor(calls));
    const get = (tenant: string): Promise<number> => fetch(url, { headers: { 'x-tenant': tenant } }).then(async (r) => (await r.text(), r.status));
    expect([await get('acme'), await get('acme'), await get('acme')]).toEqual([200, 200, 429]);
    // Another tenant has its own budget: the key came from the hook.
    expect(await get('globex')).toBe(200);
    expect(calls.n).toBe(4);
    expect(await get('boom')).toBe(503);
  });
});
