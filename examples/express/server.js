// Express with ratecontract: node examples/express/server.js (after `npm run build`).
import express from 'express';
import { createLimiter } from 'ratecontract';
import { rateLimit } from 'ratecontract/express';

const API_KEYS = new Map([['demo-key', 'acct-1']]);

const api = createLimiter({
  limits: [
    { name: 'per-account', purpose: 'shedding', limit: 100, window: '1m', key: 'principal', reason: 'fair share of the API per account' },
    { name: 'per-ip', purpose: 'abuse', limit: 30, window: '1m', key: 'ip', reason: 'bounds anonymous scraping per address' },
  ],
});
const otp = createLimiter({
  limits: [{ name: 'otp-recipient', purpose: 'abuse', limit: 3, window: '15m', key: 'body.phone', reason: 'SMS bombing of one recipient' }],
});

const identify = (req) => API_KEYS.get(req.get('x-api-key') ?? '');
const app = express();
app.use(rateLimit(api, { identify }));
app.get('/', (req, res) => {
  res.json({ hello: 'world', outcome: req.rateLimit?.outcome });
});
// Another limiter on one route; express.json() runs first, so the limiter reads req.body.
app.post('/otp', express.json({ limit: '4kb' }), rateLimit(otp, { identify }), (req, res) => {
  res.json({ sent: true });
});

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
