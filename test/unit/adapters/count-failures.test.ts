/** `count: 'failures'` over a real node:http server: the guard settles each decision by the response's status. */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createGuard } from '../../../packages/ratecontract/src/adapters/node/index.js';
import { createLimiter, ManualClock, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';

// sliding-log: exactly 5 failures in any 15 minutes (a GCRA of 5 per 15 min would admit a 6th spread-out failure).
const LOGIN: LimitDefinition = { name: 'login', purpose: 'abuse', algorithm: 'sliding-log', limit: 5, window: '15m', key: 'principal', count: 'failures', failureStatus: [401] };

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function loginServer(clock: ManualClock, delayMs: number): Promise<{ url: string; reached: () => number }> {
  const limiter = createLimiter({ clock, limits: [LOGIN] });
  const guard = createGuard(limiter, { identify: (req) => String(req.headers['x-user'] ?? '') });
  let reached = 0;
  const server = createServer((req, res) => {
    void (async () => {
      if (!(await guard(req, res))) return;
      reached++;
      await new Promise((r) => setTimeout(r, delayMs));
      res.statusCode = req.headers['x-password'] === 'right' ? 200 : 401;
      res.end();
    })();
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reached: () => reached };
}

function post(url: string, user: string, password: string): Promise<{ status: number; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(url + '/login', { method: 'POST', agent: false, headers: { 'x-user': user, 'x-password': password } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe("count: 'failures' through the node adapter", () => {
  it('50 parallel wrong passwords against N = 5: at most 5 reach the handler', async () => {
    const app = await loginServer(new ManualClock(1_700_000_000_000), 100);
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(app.url, 'victim', 'wrong')));
    expect(app.reached()).toBeLessThanOrEqual(5);
    expect(answers.filter((a) => a.status === 401)).toHaveLength(app.reached());
    expect(answers.filter((a) => a.status === 429)).toHaveLength(50 - app.reached());
  });

  it('100 successful logins never block; the 6th failure within 15 minutes gets 429 with an exact Retry-After', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const app = await loginServer(clock, 0);
    for (let i = 0; i < 100; i++) {
      expect((await post(app.url, 'alice', 'right')).status, `login ${i}`).toBe(200);
      // The guard settles when the response finishes; give the refund its turn.
      await new Promise((r) => setImmediate(r));
    }
    for (let i = 0; i < 5; i++) {
      expect((await post(app.url, 'alice', 'wrong')).status).toBe(401);
      await new Promise((r) => setImmediate(r));
      clock.advance(60_000);
    }
    const sixth = await post(app.url, 'alice', 'wrong');
    expect(sixth.status).toBe(429);
    // Failures at t = 0, 60, 120, 180, 240 s; the sixth at 300 s waits until the first leaves the 15-minute window: 900 - 300 = 600 s.
    expect(sixth.retryAfter).toBe('600');
    clock.advance(600_000 - 1);
    expect((await post(app.url, 'alice', 'wrong')).status).toBe(429);
    clock.advance(1);
    expect((await post(app.url, 'alice', 'wrong')).status).toBe(401);
  });
});

