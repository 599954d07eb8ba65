import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { createGuard, getBody, getDecision, type NodeGuardOptions } from '../../../packages/ratecontract/src/adapters/node/index.js';
import { ConfigError, createLimiter, memoryStore } from '../../../packages/ratecontract/src/index.js';
import { costFrom, identifyFrom, listen, plainOptions, raw, type AppFactory, type RunningApp } from './harness.js';
import { defineAdapterSuite } from './suite.js';

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

async function readAll(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The app under the adapter suite: awaiting `guard`, or testing `guard.now` for a boolean first. */
const factoryWith = (style: 'await' | 'now'): AppFactory => async (limiter, o, hooks) => {
  const identify = identifyFrom(o);
  const cost = costFrom(o);
  const options: NodeGuardOptions = {
    ...plainOptions(o),
    identify: identify && ((req) => identify((n) => header(req, n))),
    cost: cost && ((req) => cost((n) => header(req, n))),
    onUnexpectedError: o.onUnexpectedError && ((e) => o.onUnexpectedError?.(e)),
  };
  const guard = createGuard(limiter, options);
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = req.url ?? '/';
    if (url.startsWith('/hello')) {
      res.setHeader('x-outcome', getDecision(req)?.outcome ?? 'none');
      res.end('hello');
    } else if (url === '/slow') {
      hooks.started();
      await hooks.hold();
      res.end('done');
      hooks.finished();
    } else if (url === '/boom') {
      throw new Error('boom');
    } else if (url === '/echo') {
      const consumed = getBody(req);
      const text = consumed === undefined ? await readAll(req) : Buffer.from(consumed.raw).toString('utf8');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ body: JSON.parse(text) as unknown }));
    } else {
      res.statusCode = 404;
      res.end();
    }
  };
  const server = createServer((req, res) => {
    void (async () => {
      if (style === 'await') {
        if (!(await guard(req, res))) return;
      } else {
        const ok = guard.now(req, res);
        if (ok === false || (ok !== true && !(await ok))) return;
      }
      try {
        await handle(req, res);
      } catch {
        if (!res.headersSent) res.statusCode = 500;
        res.end();
      }
    })();
  });
  return listen(server);
};

defineAdapterSuite('node', factoryWith('await'));
defineAdapterSuite('node (guard.now)', factoryWith('now'));

describe('node: adapter specifics', () => {
  const apps: RunningApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
  });

  it('guard.now answers with a boolean at once on the memory store, and with a promise when it must wait', async () => {
    const limiter = createLimiter({ limits: [{ name: 'two', purpose: 'abuse', limit: 2, window: '1m', key: 'ip' }], defaultStore: memoryStore() });
    const seen: unknown[] = [];
    const quick = createGuard(limiter);
    const waits = createGuard(limiter, { identify: () => Promise.resolve('user-1') });
    const app = await listen(
      createServer((req, res) => {
        const ok = (req.url === '/wait' ? waits : quick).now(req, res);
        seen.push(typeof ok === 'boolean' ? ok : 'promise');
        void Promise.resolve(ok).then((go) => {
          if (go) res.end('ok');
        });
      }),
    );
    apps.push(app);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${app.url}/`)).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect(seen).toEqual([true, true, false]);
    const waited = await fetch(`${app.url}/wait`);
    await waited.arrayBuffer();
    expect(seen[3]).toBe('promise');
  });

  it('reads req.headers only when a limit, a key function or a trusted proxy needs them', async () => {
    const byIp = createLimiter({ limits: [{ name: 'ip', purpose: 'abuse', limit: 100, window: '1m', key: 'ip' }], defaultStore: memoryStore() });
    const byHeader = createLimiter({ limits: [{ name: 'tenant', purpose: 'abuse', limit: 1, window: '1m', key: 'header.x-tenant' }], defaultStore: memoryStore() });
    const byFunction = createLimiter({ limits: [{ name: 'fn', purpose: 'abuse', limit: 1, window: '1m', key: (ctx) => (ctx.headers?.['x-tenant'] as string | undefined) ?? 'none' }], defaultStore: memoryStore() });
    const guards = {
      '/ip': createGuard(byIp),
      '/header': createGuard(byHeader),
      '/function': createGuard(byFunction),
      '/proxied': createGuard(byIp, { trustProxy: ['127.0.0.1/32'] }),
    };
    const touched: Record<string, boolean> = {};
    const app = await listen(
      createServer((req, res) => {
        const path = (req.url ?? '/') as keyof typeof guards;
        const headers = req.headers; // a handler may read them first itself; the spy sees only the guard's reads
        touched[path] = false;
        Object.defineProperty(req, 'headers', {
          configurable: true,
          get: () => {
            touched[path] = true;
            return headers;
          },
        });
        void guards[path](req, res).then((go) => {
          if (go) res.end('ok');
        });
      }),
    );
    apps.push(app);
    const tenant = { 'x-tenant': 'acme' };
    expect((await raw(app.url, '/ip', { headers: tenant })).status).toBe(200);
    expect(touched['/ip']).toBe(false);
    for (const path of ['/header', '/function'] as const) {
      expect((await raw(app.url, path, { headers: tenant })).status).toBe(200);
      expect(touched[path]).toBe(true);
      // The second request of the tenant is over its limit of 1: the key came from the header.
      expect((await raw(app.url, path, { headers: tenant })).status).toBe(429);
    }
    expect((await raw(app.url, '/proxied', { headers: { 'x-forwarded-for': '198.51.100.7' } })).status).toBe(200);
    expect(touched['/proxied']).toBe(true);
  });

  it('chooses a limiter per request with limiterFor, or none', async () => {
    const strict = createLimiter({ limits: [{ name: 'strict', purpose: 'abuse', limit: 1, window: '1m', key: 'ip' }], defaultStore: memoryStore() });
    const lax = createLimiter({ limits: [{ name: 'lax', purpose: 'abuse', limit: 100, window: '1m', key: 'ip' }], defaultStore: memoryStore() });
    const guard = createGuard(lax, { limiterFor: (req) => (req.url === '/otp' ? strict : req.url === '/health' ? false : undefined) });
    const app = await listen(
      createServer((req, res) => {
        void guard(req, res).then((go) => {
          if (go) res.end(getDecision(req)?.results[0]?.name ?? 'none');
        });
      }),
    );
    apps.push(app);
    expect((await raw(app.url, '/otp')).body).toBe('strict');
    expect((await raw(app.url, '/otp')).status).toBe(429);
    expect((await raw(app.url, '/other')).body).toBe('lax');
    for (let i = 0; i < 3; i++) expect((await raw(app.url, '/health')).body).toBe('none');
  });

  it('rejects bad options at construction, naming the option', () => {
    const limiter = createLimiter({ limits: [{ name: 'a', purpose: 'abuse', limit: 1, window: '1m' }] });
    const bad: Array<[NodeGuardOptions, string]> = [
      [{ trustProxy: ['10.0.0.0/8', 'bogus'] }, 'trustProxy[1]'],
      [{ maxBodyBytes: -1 }, 'maxBodyBytes'],
      [{ identify: 'alice' as unknown as () => string }, 'identify'],
      [{ errorRetryAfter: 'soon' as '1s' }, 'errorRetryAfter'],
      [{ advertise: 'everyone' as 'always' }, 'advertise'],
    ];
    for (const [o, option] of bad) {
      try {
        createGuard(limiter, o);
        expect.unreachable(option);
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        expect((e as ConfigError).option).toBe(option);
      }
    }
    expect(() => createGuard({} as never)).toThrow(ConfigError);
  });
});
