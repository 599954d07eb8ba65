import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono } from 'hono';
import { afterAll, describe, expect, it } from 'vitest';
import { rateLimit, type HonoRateLimitOptions, type RateLimitVariables } from '../../../packages/ratecontract/src/adapters/hono/index.js';
import { ConfigError, createLimiter, memoryStore } from '../../../packages/ratecontract/src/index.js';
import { costFrom, identifyFrom, listen, plainOptions, raw, type AppFactory, type RunningApp } from './harness.js';
import { defineAdapterSuite } from './suite.js';

async function run(app: Hono<{ Variables: RateLimitVariables }>): Promise<RunningApp> {
  // serve() listens at once; close that listener and let `listen` bind 127.0.0.1:0.
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return listen(server);
}

const factory: AppFactory = (limiter, o, hooks) => {
  const identify = identifyFrom(o);
  const cost = costFrom(o);
  const options: HonoRateLimitOptions = {
    ...plainOptions(o),
    getConnInfo,
    identify: identify && ((c) => identify((n) => c.req.header(n))),
    cost: cost && ((c) => cost((n) => c.req.header(n))),
    onUnexpectedError: o.onUnexpectedError && ((e) => o.onUnexpectedError?.(e)),
  };
  const app = new Hono<{ Variables: RateLimitVariables }>();
  app.onError((_err, c) => c.text('error', 500));
  app.use(rateLimit(limiter, options));
  app.get('/hello', (c) => {
    c.header('x-outcome', c.get('rateLimit')?.outcome ?? 'none');
    return c.text('hello');
  });
  app.get('/slow', async (c) => {
    hooks.started();
    await hooks.hold();
    const done = c.text('done');
    hooks.finished();
    return done;
  });
  app.get('/boom', () => {
    throw new Error('boom');
  });
  app.post('/echo', async (c) => c.json({ body: (await c.req.json()) as unknown }));
  return run(app);
};

defineAdapterSuite('hono', factory);

describe('hono: adapter specifics', () => {
  const apps: RunningApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
  });

  it('requires the runtime address helper when a limit keys on ip', () => {
    const byIp = createLimiter({ limits: [{ name: 'per-ip', purpose: 'abuse', limit: 1, window: '1m', key: 'ip' }] });
    expect(() => rateLimit(byIp)).toThrow(ConfigError);
    expect(() => rateLimit(byIp, { trustProxy: 1 })).not.toThrow();
    const byUser = createLimiter({ limits: [{ name: 'per-user', purpose: 'abuse', limit: 1, window: '1m', key: 'principal' }] });
    expect(() => rateLimit(byUser)).not.toThrow();
  });

  it('adds the fields to a Response the handler built itself', async () => {
    const limiter = createLimiter({ limits: [{ name: 'per-user', purpose: 'abuse', limit: 5, window: '1m', key: 'principal' }], defaultStore: memoryStore() });
    const app = new Hono<{ Variables: RateLimitVariables }>();
    app.use(rateLimit(limiter, { identify: (c) => c.req.header('x-user') }));
    app.get('/raw', () => new Response('raw', { headers: { 'x-own': '1' } }));
    const running = await run(app);
    apps.push(running);
    const r = await raw(running.url, '/raw', { headers: { 'x-user': 'alice' } });
    expect(r.body).toBe('raw');
    expect(r.headers['x-own']).toBe('1');
    expect(r.headers['ratelimit-policy']).toMatch(/^"per-user";q=5;w=60;pk=:/);
    expect(r.headers['ratelimit']).toMatch(/^"per-user";r=4;t=12;pk=:/);
  });

  it('takes a limiter per route and exposes the decision with c.get', async () => {
    const otp = createLimiter({ limits: [{ name: 'otp', purpose: 'abuse', limit: 1, window: '15m', key: 'body.phone' }], defaultStore: memoryStore() });
    const app = new Hono<{ Variables: RateLimitVariables }>();
    app.post('/otp', rateLimit(otp, { advertise: 'always' }), async (c) => c.json({ limit: c.get('rateLimit')?.results[0]?.name, body: (await c.req.json()) as unknown }));
    const running = await run(app);
    apps.push(running);
    const first = await raw(running.url, '/otp', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"phone":"+1"}' });
    expect(JSON.parse(first.body)).toEqual({ limit: 'otp', body: { phone: '+1' } });
    expect(first.headers['ratelimit-policy']).toMatch(/^"otp";q=1;w=900;pk=:/);
    expect((await raw(running.url, '/otp', { method: 'POST', body: '{"phone":"+1"}' })).status).toBe(429);
  });
});
