// Fastify with ratecontract: node examples/fastify/server.js (after `npm run build`).
import Fastify from 'fastify';
import { createLimiter } from 'ratecontract';
import { rateLimitPlugin } from 'ratecontract/fastify';

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

const app = Fastify();
await app.register(rateLimitPlugin, {
  limiter: api,
  identify: (request) => API_KEYS.get(String(request.headers['x-api-key'] ?? '')),
  maxBodyBytes: 4096,
});
app.get('/', (request) => ({ hello: 'world', outcome: request.rateLimit?.outcome }));
app.post('/otp', { config: { rateLimit: { limiter: otp } } }, () => ({ sent: true }));
app.get('/health', { config: { rateLimit: false } }, () => 'ok');

const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
console.log(`listening on ${address}`);
