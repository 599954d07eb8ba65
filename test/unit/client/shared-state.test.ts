import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createGuard } from '../../../packages/ratecontract/src/adapters/node/index.js';
import { createFetch, type WaitInfo } from '../../../packages/ratecontract/src/client/index.js';
import { createLimiter, ManualClock, memoryStore } from '../../../packages/ratecontract/src/index.js';
import { Held, scriptedServer, until, type Scripted, type ScriptedServer } from './helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

async function serve(script: (n: number, tenant: string) => Scripted): Promise<ScriptedServer> {
  const s = await scriptedServer((n, hit) => script(n, String(hit.headers['x-tenant'] ?? '')));
  closers.push(() => s.close());
  return s;
}

const OK: Scripted = { status: 200, body: 'ok' };

describe('shared state across concurrent requests of one client', () => {
  it('one 429 with Retry-After: 30 holds every request in its scope, not just the one that got it', async () => {
    const s = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '30' } } : OK));
    const h = new Held();
    const waits: WaitInfo[] = [];
    const c = createFetch({ sleep: h.sleep, clock: h.clock, random: () => 0, onWait: (w) => waits.push(w) });

    const a = c(`${s.url}/a`);
    const first = await h.next();
    expect(first.ms).toBe(30_000);
    const b = c(`${s.url}/b`);
    const d = c(`${s.url}/d`);
    const held = [await h.next(), await h.next()];
    // B and D wait without being sent: the server has seen only A.
    expect(held.map((w) => w.ms)).toEqual([30_000, 30_000]);
    expect(s.hits).toHaveLength(1);
    expect(waits.map((w) => [w.url.slice(-2), w.attempt, w.reason])).toEqual([
      ['/a', 2, 'retry-after'],
      ['/b', 1, 'retry-after'],
      ['/d', 1, 'retry-after'],
    ]);

    h.now += 30_000;
    for (const w of [first, ...held]) w.release();
    expect((await Promise.all([a, b, d])).map((r) => r.status)).toEqual([200, 200, 200]);
    expect(s.hits.map((x) => x.url).sort()).toEqual(['/a', '/a', '/b', '/d']);
  });

  it('requests held by a shared Retry-After get the spread too: never earlier, not all at one instant', async () => {
    const s = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '30' } } : OK));
    const h = new Held();
    let u = 0;
    const c = createFetch({ sleep: h.sleep, clock: h.clock, random: () => (u = (u + 0.3) % 1) });
    const a = c(s.url);
    const first = await h.next();
    const others = [c(s.url), c(s.url)];
    const held = [await h.next(), await h.next()];
    const all = [first, ...held].map((w) => w.ms);
    // 30 s plus a spread below a tenth of it; three different instants.
    for (const ms of all) {
      expect(ms).toBeGreaterThanOrEqual(30_000);
      expect(ms).toBeLessThan(33_000);
    }
    expect(new Set(all).size).toBe(3);
    h.now += 33_000;
    for (const w of [first, ...held]) w.release();
    await Promise.all([a, ...others]);
  });

  it("with pacing 'off', a Retry-After still holds the partition (the RateLimit fields are not read)", async () => {
    const s = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '30', ratelimit: '"default";r=0;t=99' } } : OK));
    const h = new Held();
    const c = createFetch({ sleep: h.sleep, clock: h.clock, random: () => 0, pacing: 'off' });
    const a = c(s.url);
    const first = await h.next();
    const b = c(s.url);
    const held = await h.next();
    expect([first.ms, held.ms]).toEqual([30_000, 30_000]);
    expect(s.hits).toHaveLength(1);
    h.now += 30_000;
    first.release();
    held.release();
    await Promise.all([a, b]);
  });

  it('partitions are separate: a 429 for one tenant does not hold another', async () => {
    const s = await serve((n, tenant) => (tenant === 'a' && n === 0 ? { status: 429, headers: { 'retry-after': '30' } } : OK));
    const h = new Held();
    const c = createFetch({ sleep: h.sleep, clock: h.clock, random: () => 0, partition: (req) => req.headers.get('x-tenant') ?? '' });
    const a = c(s.url, { headers: { 'x-tenant': 'a' } });
    const wait = await h.next();
    // Tenant b goes straight through while tenant a waits.
    expect((await c(s.url, { headers: { 'x-tenant': 'b' } })).status).toBe(200);
    expect(s.hits).toHaveLength(2);
    // Another request of tenant a is held.
    const a2 = c(s.url, { headers: { 'x-tenant': 'a' } });
    const wait2 = await h.next();
    expect(wait2.ms).toBe(30_000);
    expect(s.hits).toHaveLength(2);
    h.now += 30_000;
    wait.release();
    wait2.release();
    expect((await Promise.all([a, a2])).map((r) => r.status)).toEqual([200, 200]);
  });

  it('two partitions told the same policy and pk share it', async () => {
    let n = 0;
    const s = await serve(() => ({ status: 200, headers: { ratelimit: `"shared";r=${n++ < 2 ? 1 : 0};t=5;pk=:AAAA:` } }));
    const h = new Held();
    const c = createFetch({ sleep: h.sleep, clock: h.clock, random: () => 0, partition: (req) => req.headers.get('x-tenant') ?? '' });
    const as = (tenant: string): Promise<Response> => c(s.url, { headers: { 'x-tenant': tenant } });
    await as('a'); // r=1
    await as('b'); // r=1, same policy and pk: the same state
    await as('a'); // spends the last one (the answer says r=0 too)
    const b = as('b');
    const w = await h.next();
    expect(w.ms).toBe(5000);
    expect(s.hits).toHaveLength(3);
    h.now += 5000;
    w.release();
    await b;
  });

  it('RateLimit r is shared: with one request left, one of three goes and two wait for t; then one per q/w, not all at once', async () => {
    const s = await serve((n) => ({ status: 200, headers: { ratelimit: `"default";r=${n === 0 ? 1 : 0};t=10`, 'ratelimit-policy': '"default";q=2;w=10' } }));
    const h = new Held();
    const c = createFetch({ sleep: h.sleep, clock: h.clock, random: () => 0 });
    await c(s.url); // learns r=1
    const three = [c(s.url), c(s.url), c(s.url)];
    const held = [await h.next(), await h.next()];
    expect(held.map((w) => w.ms)).toEqual([10_000, 10_000]);
    await three[0];
    expect(s.hits).toHaveLength(2);

    h.now += 10_000;
    for (const w of held) w.release();
    // At t, one more unit (q/w = 2 per 10 s: one per 5 s), not the whole quota.
    const again = await h.next();
    expect(again.ms).toBe(5000);
    h.now += 5000;
    again.release();
    await Promise.all(three);
    expect(s.hits).toHaveLength(4);
  });
});

describe('requests in flight', () => {
  it('are counted against an r the server reported before it saw them', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const s = await serve((n) => {
      const headers = { ratelimit: `"default";r=${Math.max(0, 3 - n)};t=10` };
      // n = 1..3 are answered when the test says; the first of them (r=2) first.
      if (n === 2 || n === 3) return { status: 200, headers, after: new Promise<void>(() => {}) };
      return { status: 200, headers, ...(n === 1 ? { after: held } : {}) };
    });
    const h = new Held();
    const c = createFetch({ sleep: h.sleep, clock: h.clock, random: () => 0 });
    await c(s.url); // r=3
    const first = c(s.url);
    void c(s.url).catch(() => undefined);
    void c(s.url).catch(() => undefined);
    await until(() => s.hits.length === 4);
    release();
    await first; // says r=2, but two requests the server has not counted are in flight
    const fourth = c(s.url).then(() => 'sent' as const);
    const outcome = await Promise.race([fourth, h.next().then(() => 'waited' as const)]);
    expect(outcome).toBe('waited');
    expect(s.hits).toHaveLength(4);
  });
});

describe('against the ratecontract node adapter (createGuard)', () => {
  async function guarded(clock: ManualClock): Promise<{ url: string; statuses: number[] }> {
    const limiter = createLimiter({
      clock,
      defaultStore: memoryStore(),
      limits: [{ name: 'per-ip', purpose: 'abuse', limit: 2, window: '10s', key: 'ip' }],
    });
    const guard = createGuard(limiter, { advertise: 'always' });
    const statuses: number[] = [];
    const server = createServer((req, res) => {
      res.on('finish', () => statuses.push(res.statusCode));
      void guard(req, res).then((ok) => {
        if (ok) res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, statuses };
  }

  it('paces from the RateLimit fields: every request succeeds and the server never rejects one', async () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 1, 9));
    const { url, statuses } = await guarded(clock);
    const waits: number[] = [];
    const c = createFetch({
      clock,
      random: () => 0,
      sleep: (ms) => {
        waits.push(ms);
        clock.advance(ms);
        return Promise.resolve();
      },
    });
    for (let i = 0; i < 6; i++) expect((await c(url)).status).toBe(200);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    expect(waits.length).toBeGreaterThan(0);
  });

  it("with pacing 'off', it meets the 429s and honours their Retry-After, and still every request succeeds", async () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 1, 9));
    const { url, statuses } = await guarded(clock);
    const reasons: string[] = [];
    const c = createFetch({
      clock,
      random: () => 0,
      pacing: 'off',
      onWait: (w) => reasons.push(w.reason),
      sleep: (ms) => {
        clock.advance(ms);
        return Promise.resolve();
      },
    });
    for (let i = 0; i < 6; i++) expect((await c(url)).status).toBe(200);
    expect(statuses.filter((x) => x === 429).length).toBeGreaterThan(0);
    expect(statuses.filter((x) => x === 200)).toHaveLength(6);
    expect(reasons.length).toBeGreaterThan(0);
    expect(reasons.every((r) => r === 'retry-after')).toBe(true);
  });
});
