import { createServer } from 'node:http';
import express, { type NextFunction, type Request, type Response as ExpressResponse } from 'express';
import { afterAll, describe, expect, it } from 'vitest';
import { rateLimit, type ExpressRateLimitOptions } from '../../../packages/ratecontract/src/adapters/express/index.js';
import { createLimiter, memoryStore } from '../../../packages/ratecontract/src/index.js';
import { costFrom, identifyFrom, listen, plainOptions, raw, type AppFactory, type RunningApp } from './harness.js';
import { defineAdapterSuite } from './suite.js';

const factory: AppFactory = async (limiter, o, hooks) => {
  const identify = identifyFrom(o);
  const cost = costFrom(o);
  const options: ExpressRateLimitOptions = {
    ...plainOptions(o),
    identify: identify && ((req) => identify((n) => req.get(n))),
    cost: cost && ((req) => cost((n) => req.get(n))),
    onUnexpectedError: o.onUnexpectedError && ((e) => o.onUnexpectedError?.(e)),
  };
  const app = express();
  app.use(rateLimit(limiter, options));
  app.use(express.json());
  app.get('/hello', (req, res) => {
    res.set('x-outcome', req.rateLimit?.outcome ?? 'none').send('hello');
  });
  app.get('/slow', async (_req, res) => {
    hooks.started();
    await hooks.hold();
    res.send('done');
    hooks.finished();
  });
  app.get('/boom', () => {
    throw new Error('boom');
  });
  app.post('/echo', (req, res) => {
    res.json({ body: req.body as unknown });
  });
  // Quiet error handler (the default one logs the stack); Express knows it by its four parameters.
  app.use((_err: unknown, _req: Request, res: ExpressResponse, next: NextFunction) => {
    if (res.headersSent) next(_err);
    else res.status(500).end();
  });
  return listen(createServer(app));
};

defineAdapterSuite('express', factory);

describe('express: adapter specifics', () => {
  const apps: RunningApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
  });

  it('takes a limiter per route, sets res.locals.rateLimit, and uses a body parsed before it', async () => {
    const otp = createLimiter({ limits: [{ name: 'otp', purpose: 'abuse', limit: 1, window: '15m', key: 'body.phone' }], defaultStore: memoryStore() });
    const api = createLimiter({ limits: [{ name: 'api', purpose: 'shedding', limit: 100, window: '1m', key: 'ip' }], defaultStore: memoryStore() });
    const app = express();
    app.use(express.json());
    app.use(rateLimit(api));
    app.post('/otp', rateLimit(otp), (req, res) => {
      res.json({ limits: (res.locals['rateLimit'] as { results: Array<{ name: string }> }).results.map((r) => r.name), body: req.body as unknown });
    });
    const running = await listen(createServer(app));
    apps.push(running);
    const send = (): Promise<Response> => fetch(`${running.url}/otp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"phone":"+1"}' });
    const first = await send();
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ limits: ['otp'], body: { phone: '+1' } });
    expect((await send()).status).toBe(429);
  });

  it('leaves non-JSON bodies to their own parsers', async () => {
    const limiter = createLimiter({ limits: [{ name: 'otp', purpose: 'abuse', limit: 5, window: '1m', key: 'body.phone' }], defaultStore: memoryStore() });
    const app = express();
    app.use(rateLimit(limiter));
    app.use(express.text());
    app.post('/t', (req, res) => {
      res.send(`got:${String(req.body)}`);
    });
    const running = await listen(createServer(app));
    apps.push(running);
    const r = await raw(running.url, '/t', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'plain words' });
    expect(r.body).toBe('got:plain words');
  });
});
