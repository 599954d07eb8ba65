import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { rateLimitPlugin, type FastifyRateLimitOptions } from '../../../packages/ratecontract/src/adapters/fastify/index.js';
import { createLimiter, memoryStore, type Limiter } from '../../../packages/ratecontract/src/index.js';
import { costFrom, identifyFrom, plainOptions, raw, type AppFactory, type RunningApp, type SuiteOptions } from './harness.js';
import { defineAdapterSuite } from './suite.js';

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function options(limiter: Limiter, o: SuiteOptions): FastifyRateLimitOptions {
  const identify = identifyFrom(o);
  const cost = costFrom(o);
  return {
    limiter,
    ...plainOptions(o),
    identify: identify && ((req) => identify((n) => header(req.headers[n]))),
    cost: cost && ((req) => cost((n) => header(req.headers[n]))),
    onUnexpectedError: o.onUnexpectedError && ((e) => o.onUnexpectedError?.(e)),
  };
}

async function run(app: FastifyInstance): Promise<RunningApp> {
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
}

const factory: AppFactory = async (limiter, o, hooks) => {
  const app = Fastify({ logger: false });
  await app.register(rateLimitPlugin, options(limiter, o));
  app.get('/hello', async (request, reply) => {
    void reply.header('x-outcome', request.rateLimit?.outcome ?? 'none');
    return 'hello';
  });
  app.get('/slow', async () => {
    hooks.started();
    await hooks.hold();
    hooks.finished();
    return 'done';
  });
  app.get('/boom', () => {
    throw new Error('boom');
  });
  app.post('/echo', (request) => ({ body: request.body }));
  return run(app);
};

defineAdapterSuite('fastify', factory);

describe('fastify: adapter specifics', () => {
  const apps: RunningApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
  });

  it('chooses the limiter per route through route config, or none', async () => {
    const api = createLimiter({ limits: [{ name: 'api', purpose: 'shedding', limit: 100, window: '1m', key: 'ip' }], defaultStore: memoryStore() });
    const otp = createLimiter({ limits: [{ name: 'otp', purpose: 'abuse', limit: 1, window: '15m', key: 'body.phone' }], defaultStore: memoryStore() });
    const app = Fastify();
    await app.register(rateLimitPlugin, { limiter: api, maxBodyBytes: 256 });
    app.post('/otp', { config: { rateLimit: { limiter: otp } } }, (request) => ({ limits: request.rateLimit?.results.map((r) => r.name) }));
    app.get('/health', { config: { rateLimit: false } }, (request) => ({ decided: request.rateLimit !== undefined }));
    app.get('/api', (request) => ({ limits: request.rateLimit?.results.map((r) => r.name) }));
    const running = await run(app);
    apps.push(running);
    const send = (body: string): Promise<Response> => fetch(`${running.url}/otp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const first = await send('{"phone":"+1"}');
    expect(await first.json()).toEqual({ limits: ['otp'] });
    expect((await send('{"phone":"+1"}')).status).toBe(429);
    // the route's body bound comes from maxBodyBytes (Fastify answers 413 itself)
    expect((await send(JSON.stringify({ phone: '+2', pad: 'x'.repeat(300) }))).status).toBe(413);
    expect(await (await fetch(`${running.url}/health`)).json()).toEqual({ decided: false });
    expect(await (await fetch(`${running.url}/api`)).json()).toEqual({ limits: ['api'] });
  });

  it('limits routes registered before the plugin too, per-route limiters and body keys included', async () => {
    const api = createLimiter({ limits: [{ name: 'api', purpose: 'abuse', limit: 2, window: '1m', key: 'ip' }], defaultStore: memoryStore() });
    const otp = createLimiter({ limits: [{ name: 'otp', purpose: 'abuse', limit: 1, window: '15m', key: 'body.phone' }], defaultStore: memoryStore() });
    const app = Fastify();
    app.post('/otp-before', { config: { rateLimit: { limiter: otp } } }, (request) => ({ limits: request.rateLimit?.results.map((r) => r.name) }));
    app.get('/api-before', (request) => ({ limits: request.rateLimit?.results.map((r) => r.name) }));
    app.get('/health-before', { config: { rateLimit: false } }, (request) => ({ decided: request.rateLimit !== undefined }));
    await app.register(rateLimitPlugin, { limiter: api });
    app.post('/otp-after', { config: { rateLimit: { limiter: otp } } }, (request) => ({ limits: request.rateLimit?.results.map((r) => r.name) }));
    const running = await run(app);
    apps.push(running);
    const send = (path: string, phone: string): Promise<Response> =>
      fetch(`${running.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ phone }) });
    // the body key is read on the parsed body, on routes declared before and after the plugin
    expect(await (await send('/otp-before', '+1')).json()).toEqual({ limits: ['otp'] });
    expect((await send('/otp-before', '+1')).status).toBe(429);
    expect((await send('/otp-after', '+1')).status).toBe(429);
    expect(await (await send('/otp-after', '+2')).json()).toEqual({ limits: ['otp'] });
    expect((await send('/otp-before', '+2')).status).toBe(429);
    // the per-ip limiter was not consumed by the body-keyed routes
    expect(await (await fetch(`${running.url}/api-before`)).json()).toEqual({ limits: ['api'] });
    expect((await fetch(`${running.url}/api-before`)).status).toBe(200);
    expect((await fetch(`${running.url}/api-before`)).status).toBe(429);
    for (let i = 0; i < 3; i++) expect(await (await fetch(`${running.url}/health-before`)).json()).toEqual({ decided: false });
  });

  it('registered twice, each registration checks its own body-keyed limiter once', async () => {
    const strict = createLimiter({ limits: [{ name: 'strict', purpose: 'abuse', limit: 1, window: '15m', key: 'body.phone' }], defaultStore: memoryStore() });
    const loose = createLimiter({ limits: [{ name: 'loose', purpose: 'abuse', limit: 5, window: '15m', key: 'body.phone' }], defaultStore: memoryStore() });
    const app = Fastify();
    await app.register(rateLimitPlugin, { limiter: strict });
    await app.register(rateLimitPlugin, { limiter: loose });
    app.post('/otp', (request) => ({ limits: request.rateLimit?.results.map((r) => r.name) }));
    const running = await run(app);
    apps.push(running);
    const send = (): Promise<Response> => fetch(`${running.url}/otp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"phone":"+1"}' });
    expect(await (await send()).json()).toEqual({ limits: ['loose'] });
    const second = await send();
    expect(second.status).toBe(429);
    expect(second.headers.get('content-type')).toContain('application/problem+json');
  });

  it('applies to routes registered in other encapsulated contexts', async () => {
    const limiter = createLimiter({ limits: [{ name: 'per-ip', purpose: 'abuse', limit: 1, window: '1m', key: 'ip' }], defaultStore: memoryStore() });
    const app = Fastify();
    await app.register(rateLimitPlugin, { limiter });
    await app.register(
      async (child) => {
        child.get('/x', () => 'x');
        await Promise.resolve();
      },
      { prefix: '/child' },
    );
    const running = await run(app);
    apps.push(running);
    expect((await raw(running.url, '/child/x')).status).toBe(200);
    expect((await raw(running.url, '/child/x')).status).toBe(429);
  });
});
