// node:http with ratecontract: node examples/node/server.js (after `npm run build`).
import { createServer } from 'node:http';
import { createLimiter } from 'ratecontract';
import { createGuard, getDecision } from 'ratecontract/node';

// Demo credentials: an API key maps to an account (the principal).
const API_KEYS = new Map([['demo-key', 'acct-1']]);

const limiter = createLimiter({
  limits: [
    { name: 'per-account', purpose: 'shedding', limit: 100, window: '1m', key: 'principal', reason: 'fair share of the API per account' },
    { name: 'per-ip', purpose: 'abuse', limit: 30, window: '1m', key: 'ip', reason: 'bounds anonymous scraping per address' },
  ],
});

const guard = createGuard(limiter, {
  identify: (req) => API_KEYS.get(String(req.headers['x-api-key'] ?? '')),
  trustProxy: process.env.TRUST_PROXY === undefined ? undefined : Number(process.env.TRUST_PROXY),
});

const server = createServer(async (req, res) => {
  if (!(await guard(req, res))) return; // 429 / 503 / 413 already sent
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ hello: 'world', outcome: getDecision(req)?.outcome }));
});

server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
