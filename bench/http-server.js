// One HTTP server under test, in its own process (so the load generator and
// the server never share an event loop):
//   node http-server.js <framework> <variant>     (started by run-http.js with an IPC channel)
// Listens on 127.0.0.1, port chosen by the OS, and answers GET / with 200
// "ok" (text/plain). Talks to its parent over IPC: sends { port } when
// listening; on 'mark' records CPU time and the request count, on 'report'
// answers with both since the mark. Exits when the parent disconnects, and
// after 120 s in any case.
//
// framework: node | express | fastify | hono
// variant:   bare           no limiter
//            rc             ratecontract's adapter, defaults (an anonymous caller is told nothing on a 200)
//            rc-advertise   ratecontract's adapter with advertise: 'always' (RateLimit-Policy and RateLimit on every 200)
//            rc-check       node only: ratecontract's limiter.check called in the handler,
//                           no adapter (what the core decision costs without the HTTP layer)
//            incumbent      the framework's usual limiter, its defaults (headers on every 200):
//                           express-rate-limit, @fastify/rate-limit, hono-rate-limiter;
//                           node: rate-limiter-flexible's RateLimiterMemory called in the handler
//
// Every limiter: in memory, per client IP, a 1 hour window, never reached
// (every request comes from 127.0.0.1: one hot key).

import http from 'node:http';
import { createRequire } from 'node:module';
import { fromDist } from './dist.js';

const require = createRequire(import.meta.url);
const [framework, variant] = process.argv.slice(2);
const load = fromDist; // RATECONTRACT_DIST_DIR (see dist.js) or ../dist/

/** Count-based limits (fixed windows, like every incumbent here): never reached in a run. */
const LIMIT = 1e8;
const WINDOW_MS = 3_600_000;

let served = 0;

async function limiter() {
  const { createLimiter } = await load('index.js');
  return createLimiter({ limits: [{ name: 'per-ip', purpose: 'abuse', algorithm: 'fixed-window', limit: LIMIT, window: '1h', key: 'ip' }] });
}
const rcOptions = () => (variant === 'rc-advertise' ? { advertise: 'always' } : {});

const builders = {
  async node() {
    if (variant === 'bare') {
      return http.createServer((req, res) => {
        served++;
        res.setHeader('content-type', 'text/plain');
        res.end('ok');
      });
    }
    if (variant === 'incumbent') {
      const { RateLimiterMemory } = require('rate-limiter-flexible');
      const rl = new RateLimiterMemory({ points: LIMIT, duration: WINDOW_MS / 1000 });
      return http.createServer(async (req, res) => {
        served++;
        try {
          await rl.consume(req.socket.remoteAddress);
        } catch {
          res.statusCode = 429;
          res.end();
          return;
        }
        res.setHeader('content-type', 'text/plain');
        res.end('ok');
      });
    }
    if (variant === 'rc-check') {
      const l = await limiter();
      return http.createServer(async (req, res) => {
        served++;
        if (!(await l.check({ ip: req.socket.remoteAddress })).allowed) {
          res.statusCode = 429;
          res.end();
          return;
        }
        res.setHeader('content-type', 'text/plain');
        res.end('ok');
      });
    }
    const { createGuard } = await load('adapters/node/index.js');
    const guard = createGuard(await limiter(), rcOptions());
    const serve = (res) => {
      res.setHeader('content-type', 'text/plain');
      res.end('ok');
    };
    // guard.now: a boolean when decided at once (memory store), else a promise; the handler stays
    // synchronous like the bare one (docs/adapters/node.md), awaiting only when there is something to wait for.
    return http.createServer((req, res) => {
      served++;
      const ok = guard.now(req, res);
      if (ok === true) serve(res);
      else if (ok !== false) void ok.then((go) => go && serve(res));
    });
  },

  async express() {
    const { default: express } = await import('express');
    const app = express();
    if (variant === 'incumbent') {
      const { rateLimit } = await import('express-rate-limit');
      app.use(rateLimit({ windowMs: WINDOW_MS, limit: LIMIT }));
    } else if (variant !== 'bare') {
      const { rateLimit } = await load('adapters/express/index.js');
      app.use(rateLimit(await limiter(), rcOptions()));
    }
    app.get('/', (req, res) => {
      served++;
      res.type('text/plain').send('ok');
    });
    return http.createServer(app);
  },

  async fastify() {
    const { default: Fastify } = await import('fastify');
    let server;
    const app = Fastify({
      serverFactory: (handler) => {
        server = http.createServer(handler);
        return server;
      },
    });
    if (variant === 'incumbent') {
      const { default: fastifyRateLimit } = await import('@fastify/rate-limit');
      await app.register(fastifyRateLimit, { max: LIMIT, timeWindow: WINDOW_MS });
    } else if (variant !== 'bare') {
      const { rateLimitPlugin } = await load('adapters/fastify/index.js');
      await app.register(rateLimitPlugin, { limiter: await limiter(), ...rcOptions() });
    }
    app.get('/', async (request, reply) => {
      served++;
      reply.type('text/plain');
      return 'ok';
    });
    await app.ready();
    return server;
  },

  async hono() {
    const { Hono } = await import('hono');
    const { getRequestListener } = await import('@hono/node-server');
    const { getConnInfo } = await import('@hono/node-server/conninfo');
    const app = new Hono();
    if (variant === 'incumbent') {
      const { rateLimiter } = await import('hono-rate-limiter');
      app.use(rateLimiter({ windowMs: WINDOW_MS, limit: LIMIT, keyGenerator: (c) => getConnInfo(c).remote.address ?? 'unknown' }));
    } else if (variant !== 'bare') {
      const { rateLimit } = await load('adapters/hono/index.js');
      app.use(rateLimit(await limiter(), { getConnInfo, ...rcOptions() }));
    }
    app.get('/', (c) => {
      served++;
      return c.text('ok');
    });
    // What @hono/node-server's serve() does, on a server this file controls.
    return http.createServer(getRequestListener(app.fetch));
  },
};

if (!(framework in builders) || !['bare', 'rc', 'rc-advertise', 'incumbent', ...(framework === 'node' ? ['rc-check'] : [])].includes(variant)) {
  console.error('usage: node http-server.js <node|express|fastify|hono> <bare|rc|rc-advertise|incumbent> (node also: rc-check)');
  process.exit(2);
}

setTimeout(() => process.exit(3), 120_000).unref();
process.on('disconnect', () => process.exit(0));

const server = await builders[framework]();
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send?.({ port: server.address().port }));

let mark = { cpu: process.cpuUsage(), served: 0, t: performance.now() };
process.on('message', (m) => {
  if (m === 'mark') {
    mark = { cpu: process.cpuUsage(), served, t: performance.now() };
    process.send({ marked: true });
  } else if (m === 'report') {
    const cpu = process.cpuUsage(mark.cpu);
    process.send({ cpuUs: cpu.user + cpu.system, served: served - mark.served, ms: performance.now() - mark.t, rssMiB: process.memoryUsage().rss / 2 ** 20 });
  }
});
