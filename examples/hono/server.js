// Hono on Node with ratecontract: node examples/hono/server.js (after `npm run build`).
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono } from 'hono';
import { createLimiter } from 'ratecontract';
import { rateLimit } from 'ratecontract/hono';

const API_KEYS = new Map([['demo-key', 'acct-1']]);

const api = createLimiter({
  limits: [
    { name: 'per-account', purpose: 'shedding', limit: 100, window: '1m', key: 'principal', reason: 'fair share of the API per account' },
    { name: 'per-ip', purpose: 'abuse', limit: 30, window: '1m', key: 'ip', reason: 'bounds anonymous scraping per address' },
  ],
});

const app = new Hono();
// The runtime's own helper gives the socket address; the middleware never imports one.
app.use(rateLimit(api, { getConnInfo, identify: (c) => API_KEYS.get(c.req.header('x-api-key') ?? '') }));
app.get('/', (c) => c.json({ hello: 'world', outcome: c.get('rateLimit')?.outcome }));

serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000), hostname: '127.0.0.1' }, (info) => {
  console.log(`listening on http://127.0.0.1:${info.port}`);
});
