/**
 * The application's own repeated fields (`Set-Cookie` above all, `Link`,
 * `Vary`) survive the contract's fields being added, on admitted, rejected
 * (429) and shed (503) answers, in each of the four adapters, over a real
 * socket with real clients: undici `request` (repeated `set-cookie` as an
 * array) and `fetch` (`Headers.getSetCookie()`).
 *
 * Each app sets fields before the guard runs (an earlier middleware, hook,
 * or the handler's first lines): `Set-Cookie` twice, `Vary: Origin`, a
 * `Link` and `Cache-Control: public, max-age=60`. Its handler then adds two
 * more cookies and two more links, in the framework's own way. The rule the
 * adapters keep (docs/headers.md, "Your fields and the contract's"):
 * everything the application set is kept; on a rejection or a shed answer the
 * contract's `Cache-Control: no-store`, `Content-Type`, `Retry-After` and
 * rate-limit fields win over the application's of the same name.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { serve as honoServe } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { rateLimit as expressLimit } from '../../../packages/ratecontract/src/adapters/express/index.js';
import { rateLimitPlugin } from '../../../packages/ratecontract/src/adapters/fastify/index.js';
import { rateLimit as honoLimit, type RateLimitVariables } from '../../../packages/ratecontract/src/adapters/hono/index.js';
import { createGuard } from '../../../packages/ratecontract/src/adapters/node/index.js';
import { createLimiter, createShedder, ManualClock, memoryStore, type Limiter, type Shedder } from '../../../packages/ratecontract/src/index.js';
import { deferred, listen, type RunningApp } from './harness.js';

const EARLY_COOKIES = ['early=1; Path=/', 'early=2; Path=/'];
const EARLY_LINK = '</early.css>; rel=preload; as=style';
const HANDLER_COOKIES = ['a=1; Path=/; HttpOnly', 'b=2; Path=/; Secure'];
const HANDLER_LINKS = ['</a.css>; rel=preload; as=style', '</b.js>; rel=preload; as=script'];
const APP_CACHE = 'public, max-age=60';

/** Holds the `/slow` handler: it calls `enter()`, then awaits `released`; the test awaits `started` and calls `release()`. */
interface Hold {
  readonly started: Promise<void>;
  readonly enter: () => void;
  readonly released: Promise<void>;
  readonly release: () => void;
}

function makeHold(): Hold {
  const s = deferred();
  const r = deferred();
  return { started: s.promise, enter: s.resolve, released: r.promise, release: r.resolve };
}

/** Builds the app for one adapter: `/fields` (fields set early and in the handler), `/slow` (held until released), `/raw` (node:http and Express: a flat field list to `writeHead`, nothing set early). */
type Factory = (limiter: Limiter, shedder: Shedder | undefined, hold: Hold) => Promise<RunningApp>;

/** The fields an earlier stage sets, on a node:http response. */
function early(res: ServerResponse): void {
  for (const c of EARLY_COOKIES) res.appendHeader('set-cookie', c);
  res.setHeader('vary', 'Origin');
  res.setHeader('link', EARLY_LINK);
  res.setHeader('cache-control', APP_CACHE);
}

async function nodeHandler(req: IncomingMessage, res: ServerResponse, hold: Hold): Promise<void> {
  if (req.url === '/slow') {
    hold.enter();
    await hold.released;
    res.end('slow');
  } else if (req.url === '/raw') {
    // The way a proxy passes fields on: a flat list, repeated names kept.
    res.writeHead(200, ['content-type', 'text/plain', ...HANDLER_COOKIES.flatMap((c) => ['set-cookie', c]), ...HANDLER_LINKS.flatMap((l) => ['link', l])]);
    res.end('raw');
  } else {
    res.appendHeader('set-cookie', HANDLER_COOKIES);
    res.appendHeader('link', HANDLER_LINKS);
    res.setHeader('content-type', 'text/plain');
    res.end('fields');
  }
}

const nodeFactory: Factory = (limiter, shedder, hold) => {
  const guard = createGuard(limiter, { advertise: 'always', ...(shedder !== undefined && { shedder }) });
  const server = createServer((req, res) => {
    if (req.url !== '/raw') early(res);
    void guard(req, res).then((ok) => (ok ? nodeHandler(req, res, hold) : undefined));
  });
  return listen(server);
};

const expressFactory: Factory = (limiter, shedder, hold) => {
  const app = express();
  app.use((req, res, next) => {
    if (req.url !== '/raw') early(res);
    next();
  });
  app.use(expressLimit(limiter, { advertise: 'always', ...(shedder !== undefined && { shedder }) }));
  app.get('/slow', async (_req, res) => {
    hold.enter();
    await hold.released;
    res.send('slow');
  });
  app.get('/raw', (req, res) => void nodeHandler(req, res, hold));
  app.get('/fields', (_req, res) => {
    for (const c of HANDLER_COOKIES) res.append('Set-Cookie', c);
    res.append('Link', HANDLER_LINKS);
    res.type('text/plain').send('fields');
  });
  return listen(createServer(app));
};

const fastifyFactory: Factory = async (limiter, shedder, hold) => {
  const app = Fastify({ logger: false });
  app.addHook('onRequest', (_request, reply, done) => {
    for (const c of EARLY_COOKIES) void reply.header('set-cookie', c);
    void reply.header('vary', 'Origin');
    void reply.header('link', EARLY_LINK);
    void reply.header('cache-control', APP_CACHE);
    done();
  });
  await app.register(rateLimitPlugin, { limiter, advertise: 'always', ...(shedder !== undefined && { shedder }) });
  app.get('/slow', async () => {
    hold.enter();
    await hold.released;
    return 'slow';
  });
  app.get('/fields', async (_request, reply) => {
    void reply.header('set-cookie', HANDLER_COOKIES);
    const links = reply.getHeader('link');
    void reply.header('link', [...(links === undefined ? [] : Array.isArray(links) ? links.map(String) : [String(links)]), ...HANDLER_LINKS]);
    void reply.type('text/plain');
    return 'fields';
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    server: app.server,
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
};

const honoFactory: Factory = (limiter, shedder, hold) => {
  const app = new Hono<{ Variables: RateLimitVariables }>();
  app.use(async (c, next) => {
    for (const v of EARLY_COOKIES) c.header('set-cookie', v, { append: true });
    c.header('vary', 'Origin');
    c.header('link', EARLY_LINK);
    c.header('cache-control', APP_CACHE);
    await next();
  });
  app.use(honoLimit(limiter, { getConnInfo, advertise: 'always', ...(shedder !== undefined && { shedder }) }));
  app.get('/slow', async (c) => {
    hold.enter();
    await hold.released;
    return c.text('slow');
  });
  app.get('/fields', (c) => {
    for (const v of HANDLER_COOKIES) c.header('set-cookie', v, { append: true });
    for (const v of HANDLER_LINKS) c.header('link', v, { append: true });
    return c.text('fields');
  });
  // serve() listens at once; close that listener and let `listen` bind 127.0.0.1:0.
  const server = honoServe({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
  return new Promise<void>((resolve) => server.close(() => resolve())).then(() => listen(server));
};

const ADAPTERS: ReadonlyArray<readonly [string, Factory, boolean]> = [
  ['node', nodeFactory, true],
  ['express', expressFactory, true],
  ['fastify', fastifyFactory, false],
  ['hono', honoFactory, false],
];

/** A field's lines joined as a list (RFC 9110 section 5.3: lines of a list-based field combine with commas). */
function list(value: string | string[] | undefined): string {
  return value === undefined ? '' : ([] as string[]).concat(value).join(', ');
}

function limiterOf(limit: number): Limiter {
  const clock = new ManualClock(1_700_000_000_000);
  return createLimiter({ limits: [{ name: 'per-ip', purpose: 'abuse', limit, window: '1m', key: 'ip' }], clock, defaultStore: memoryStore() });
}

describe.each(ADAPTERS)('%s: the application fields survive the contract fields', (_name, factory, writesRaw) => {
  const apps: RunningApp[] = [];
  const shedders: Shedder[] = [];
  afterAll(async () => {
    for (const s of shedders) s.close();
    await Promise.all(apps.map((a) => a.close()));
  });

  it('on an admitted answer: every cookie and link, the app Vary and Cache-Control, and the RateLimit fields (undici request and fetch)', async () => {
    const app = await factory(limiterOf(10), undefined, makeHold());
    apps.push(app);
    const r = await request(`${app.url}/fields`);
    expect(await r.body.text()).toBe('fields');
    expect(r.statusCode).toBe(200);
    expect(r.headers['set-cookie']).toEqual([...EARLY_COOKIES, ...HANDLER_COOKIES]);
    expect(list(r.headers['link'])).toBe([EARLY_LINK, ...HANDLER_LINKS].join(', '));
    expect(list(r.headers['vary'])).toBe('Origin');
    expect(r.headers['cache-control']).toBe(APP_CACHE);
    expect(r.headers['ratelimit-policy']).toMatch(/^"per-ip";q=10;w=60;pk=:[^:]+:$/);
    expect(r.headers['ratelimit']).toMatch(/^"per-ip";r=9;t=\d+;pk=:[^:]+:$/);
    const f = await fetch(`${app.url}/fields`);
    expect(await f.text()).toBe('fields');
    expect(f.headers.getSetCookie()).toEqual([...EARLY_COOKIES, ...HANDLER_COOKIES]);
    expect(f.headers.get('ratelimit')).toMatch(/^"per-ip";r=8;t=\d+;pk=:[^:]+:$/);
  });

  it.runIf(writesRaw)('on an admitted answer written with writeHead(status, flat field list)', async () => {
    const app = await factory(limiterOf(10), undefined, makeHold());
    apps.push(app);
    const r = await request(`${app.url}/raw`);
    expect(await r.body.text()).toBe('raw');
    expect(r.headers['set-cookie']).toEqual(HANDLER_COOKIES);
    expect(list(r.headers['link'])).toBe(HANDLER_LINKS.join(', '));
    expect(r.headers['ratelimit']).toMatch(/^"per-ip";r=9;t=\d+;pk=:[^:]+:$/);
    const f = await fetch(`${app.url}/raw`);
    await f.arrayBuffer();
    expect(f.headers.getSetCookie()).toEqual(HANDLER_COOKIES);
  });

  it('on a rejection (429): the fields set before the guard are kept; the contract Cache-Control and Content-Type win', async () => {
    const app = await factory(limiterOf(1), undefined, makeHold());
    apps.push(app);
    expect((await (await fetch(`${app.url}/fields`)).text())).toBe('fields');
    const r = await request(`${app.url}/fields`);
    const body = JSON.parse(await r.body.text()) as { status: number };
    expect(r.statusCode).toBe(429);
    expect(body.status).toBe(429);
    expect(r.headers['set-cookie']).toEqual(EARLY_COOKIES);
    expect(list(r.headers['vary'])).toBe('Origin');
    expect(list(r.headers['link'])).toBe(EARLY_LINK);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(r.headers['retry-after']).toMatch(/^\d+$/);
    expect(r.headers['ratelimit']).toMatch(/^"per-ip";r=0;t=\d+;pk=:[^:]+:$/);
    const f = await fetch(`${app.url}/fields`);
    await f.arrayBuffer();
    expect(f.status).toBe(429);
    expect(f.headers.getSetCookie()).toEqual(EARLY_COOKIES);
  });

  it('on a shed answer (503): the fields set before the guard are kept; the contract Cache-Control wins', async () => {
    // Two in flight at most, one of them for critical requests only: a default request is shed while one is held.
    const shedder = createShedder({ target: 1, maxInFlight: 2, criticalReserve: 0.5, clock: new ManualClock(1_700_000_000_000) });
    shedders.push(shedder);
    const hold = makeHold();
    const app = await factory(limiterOf(100), shedder, hold);
    apps.push(app);
    const slow = request(`${app.url}/slow`).then(async (r) => ({ status: r.statusCode, body: await r.body.text() }));
    await hold.started;
    const r = await request(`${app.url}/fields`);
    const body = JSON.parse(await r.body.text()) as { status: number };
    expect(r.statusCode).toBe(503);
    expect(body.status).toBe(503);
    expect(r.headers['set-cookie']).toEqual(EARLY_COOKIES);
    expect(list(r.headers['vary'])).toBe('Origin');
    expect(list(r.headers['link'])).toBe(EARLY_LINK);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.headers['retry-after']).toMatch(/^\d+$/);
    const f = await fetch(`${app.url}/fields`);
    await f.arrayBuffer();
    expect(f.status).toBe(503);
    expect(f.headers.getSetCookie()).toEqual(EARLY_COOKIES);
    hold.release();
    expect(await slow).toEqual({ status: 200, body: 'slow' });
  });
});
