// A login endpoint that counts failed attempts only (OWASP): node examples/login/server.js (after `npm run build`).
// POST /login with JSON { "username": "alice", "password": "..." }. Five wrong passwords per username in any
// 15 minutes, then 429 with an exact Retry-After; successful logins are given back and never block.
import { createServer } from 'node:http';
import { createLimiter } from 'ratecontract';
import { createGuard, getBody } from 'ratecontract/node';

const USERS = new Map([['alice', 'correct horse battery staple']]);

const limiter = createLimiter({
  limits: [
    {
      name: 'login',
      purpose: 'abuse',
      algorithm: 'sliding-log',
      limit: 5,
      window: '15m',
      key: 'body.username',
      // Counted when admitted (so 50 parallel guesses get at most 5 through), given back when the response is not a 401.
      count: 'failures',
      failureStatus: [401],
      reason: 'bounds password guessing per account',
    },
  ],
});

const guard = createGuard(limiter);

const server = createServer(async (req, res) => {
  if (!(await guard(req, res))) return; // 429 already sent
  const body = getBody(req)?.json ?? {};
  const ok = typeof body.username === 'string' && USERS.get(body.username) === body.password;
  // The guard settles the decision from this status when the response finishes.
  res.statusCode = ok ? 200 : 401;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ ok }));
});

server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
