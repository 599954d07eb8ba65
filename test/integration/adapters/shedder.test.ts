/**
 * Criticality load shedding over real HTTP (node:http server on 127.0.0.1,
 * real undici clients, real time): a handler that holds each request 200 ms,
 * driven far beyond the shedder's in-flight target. Critical requests keep
 * flowing through their reserve while sheddable ones are refused with 503,
 * `Retry-After` and problem+json; after the overload the shedder gives the
 * capacity back and its level turns only a few times. Generous margins: the
 * host is shared.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { rateLimit as expressLimit } from '../../../packages/ratecontract/src/adapters/express/index.js';
import { rateLimitPlugin } from '../../../packages/ratecontract/src/adapters/fastify/index.js';
import { rateLimit as honoLimit } from '../../../packages/ratecontract/src/adapters/hono/index.js';
import { createGuard } from '../../../packages/ratecontract/src/adapters/node/index.js';
import { ConfigError, createLimiter, createShedder, memoryStore, type Criticality, type Shedder, type ShedStep } from '../../../packages/ratecontract/src/index.js';

const HOLD_MS = 200;
const steps: ShedStep[] = [];
let shedder: Shedder;
let server: Server;
let base: string;
const agent = new Agent({ connections: 256, pipelining: 0 });

beforeAll(async () => {
  shedder = createShedder({ target: 20, maxInFlight: 30, criticalReserve: 0.2, interval: '50ms', increase: 0.1, onStep: (s) => steps.push(s) });
  const limiter = createLimiter({ defaultStore: memoryStore(), limits: [{ name: 'floor', purpose: 'shedding', limit: 1_000_000, window: '1s', key: 'global' }] });
  const guard = createGuard(limiter, { shedder, criticality: (req) => req.headers['x-criticality'] as Criticality | undefined });
  server = createServer((req, res) => {
    void guard(req, res).then((ok) => {
      if (!ok) return;
      setTimeout(() => res.end('ok'), HOLD_MS);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}, 30_000);

afterAll(async () => {
  shedder.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await agent.close();
}, 30_000);

interface Tally {
  ok: number;
  shed: number;
  other: number;
}

/** `lanes` clients in closed loops of one class until `until`. */
async function drive(c: Criticality, lanes: number, until: number, tally: Tally): Promise<void> {
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (Date.now() < until) {
        const res = await request(base, { headers: { 'x-criticality': c }, dispatcher: agent });
        const body = await res.body.text();
        if (res.statusCode === 200) tally.ok++;
        else if (res.statusCode === 503 && res.headers['retry-after'] === '1' && res.headers['content-type'] === 'application/problem+json' && body.includes('temporary-reduced-capacity')) {
          tally.shed++;
          // A polite client would wait Retry-After; this one comes back after a short pause to keep the pressure on.
          await new Promise((r) => setTimeout(r, 20));
        } else tally.other++;
      }
    }),
  );
}

describe('criticality shedding over real HTTP', () => {
  it('under overload critical flows at its reserved share while sheddable is refused; afterwards it recovers without flapping', async () => {
    const overloadMs = 3000;
    const t0 = Date.now();
    // Overload: 80 sheddable lanes and 6 critical lanes against an in-flight target of 20 (cap 30, 6 reserved).
    const firstHalf = { critical: { ok: 0, shed: 0, other: 0 }, sheddable: { ok: 0, shed: 0, other: 0 } };
    const secondHalf = { critical: { ok: 0, shed: 0, other: 0 }, sheddable: { ok: 0, shed: 0, other: 0 } };
    await Promise.all([
      drive('sheddable', 80, t0 + overloadMs / 2, firstHalf.sheddable),
      drive('critical', 6, t0 + overloadMs / 2, firstHalf.critical),
    ]);
    const mid = Date.now();
    await Promise.all([drive('sheddable', 80, mid + overloadMs / 2, secondHalf.sheddable), drive('critical', 6, mid + overloadMs / 2, secondHalf.critical)]);
    const overloadSteps = steps.length;
    const levelAfterOverload = shedder.stats().level;
    // Recovery: light sheddable load (4 lanes, about 4 in flight) until the level is back at 2, within 10 s.
    const recovered = { ok: 0, shed: 0, other: 0 };
    const recoverUntil = Date.now() + 10_000;
    while (shedder.stats().level < 2 && Date.now() < recoverUntil) await drive('sheddable', 4, Date.now() + 200, recovered);
    const settled = { ok: 0, shed: 0, other: 0 };
    await drive('sheddable', 4, Date.now() + 500, settled);

    const detail = JSON.stringify({ firstHalf, secondHalf, recovered, settled, levelAfterOverload, stats: shedder.stats(), steps: steps.map((s) => [Math.round(s.reading), Number(s.level.toFixed(3)), s.direction]) });
    // Nothing but 200 or a well-formed shed 503.
    for (const t of [firstHalf.critical, firstHalf.sheddable, secondHalf.critical, secondHalf.sheddable, recovered, settled]) expect(t.other, detail).toBe(0);
    // Critical: nearly every request admitted (6 reserved slots x 1.5 s / 200 ms per request = up to 45; the clients share
    // the host with the server and with other work, so ask for a fifth of that, and for no shed critical request to speak of).
    expect(secondHalf.critical.ok, detail).toBeGreaterThan(9);
    expect(secondHalf.critical.ok / (secondHalf.critical.ok + secondHalf.critical.shed), detail).toBeGreaterThan(0.9);
    // Sheddable: refused for the most part once the shedder has stepped down.
    expect(secondHalf.sheddable.ok / (secondHalf.sheddable.ok + secondHalf.sheddable.shed), detail).toBeLessThan(0.4);
    // Recovered: back to admitting everything, and it stays there.
    expect(shedder.stats().level, detail).toBe(2);
    expect(settled.shed, detail).toBe(0);
    expect(settled.ok, detail).toBeGreaterThan(0);
    // No flapping after the overload: the level rises back and turns at most once (a last step down for requests still in
    // flight when the overload ended). During the overload AIMD saws between sheddable on and off, which is its job.
    let last = 0;
    let turns = 0;
    for (const s of steps.slice(overloadSteps)) {
      if (s.direction === 0) continue;
      if (last !== 0 && s.direction !== last) turns++;
      last = s.direction;
    }
    expect(turns, detail).toBeLessThanOrEqual(1);
    expect(overloadSteps, detail).toBeGreaterThan(20);
  }, 60_000);

  it('refuses a criticality function without a shedder, or a shedder that is not one', () => {
    const limiter = createLimiter({ limits: [{ name: 'a', purpose: 'shedding', limit: 1, window: '1s', key: 'global' }] });
    expect(() => createGuard(limiter, { criticality: () => 'critical' })).toThrow(ConfigError);
    expect(() => createGuard(limiter, { criticality: () => 'critical' })).toThrow(/criticality: applies with a shedder only/);
    expect(() => createGuard(limiter, { shedder: {} as Shedder })).toThrow(/shedder: expected a shedder from createShedder/);
  });
});

describe('every adapter ends the shed ticket when the response is done', () => {
  it('node, express, fastify and hono: 20 requests each, nothing left in flight, and a shed request is a 503', async () => {
    const limiter = () => createLimiter({ limits: [{ name: 'g', purpose: 'shedding', limit: 1_000_000, window: '1s', key: 'global' }] });
    const apps: Array<{ name: string; shedder: Shedder; start: () => Promise<{ url: string; close: () => Promise<void> }> }> = [];
    const listenOn = async (srv: Server): Promise<{ url: string; close: () => Promise<void> }> => {
      if (!srv.listening) await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
      return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`, close: () => new Promise<void>((resolve) => srv.close(() => resolve())) };
    };
    const sh = (): Shedder => createShedder({ target: 4, maxInFlight: 4, criticalReserve: 0.5 });
    {
      const s = sh();
      apps.push({ name: 'node', shedder: s, start: () => { const g = createGuard(limiter(), { shedder: s }); return listenOn(createServer((req, res) => void g(req, res).then((ok) => ok && res.end('ok')))); } });
    }
    {
      const s = sh();
      apps.push({ name: 'express', shedder: s, start: () => { const app = express(); app.use(expressLimit(limiter(), { shedder: s })); app.get('/', (_q, r) => void r.send('ok')); return listenOn(createServer(app)); } });
    }
    {
      const s = sh();
      apps.push({
        name: 'fastify',
        shedder: s,
        start: async () => {
          const app = Fastify();
          await app.register(rateLimitPlugin, { limiter: limiter(), shedder: s });
          app.get('/', () => 'ok');
          await app.listen({ port: 0, host: '127.0.0.1' });
          return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`, close: () => app.close() };
        },
      });
    }
    {
      const s = sh();
      apps.push({
        name: 'hono',
        shedder: s,
        start: async () => {
          const app = new Hono();
          app.use(honoLimit(limiter(), { shedder: s }));
          app.get('/', (c) => c.text('ok'));
          const srv = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
          await new Promise<void>((resolve) => (srv.listening ? resolve() : srv.once('listening', () => resolve())));
          return listenOn(srv);
        },
      });
    }
    for (const a of apps) {
      const running = await a.start();
      try {
        for (let i = 0; i < 20; i++) {
          const res = await request(running.url, { dispatcher: agent });
          await res.body.text();
          expect(res.statusCode, a.name).toBe(200);
        }
        // Every ticket ended (the response is done a moment after the client has it).
        const until = Date.now() + 2000;
        while (a.shedder.stats().inFlight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
        expect(a.shedder.stats().inFlight, a.name).toBe(0);
        expect(a.shedder.stats().admitted.default, a.name).toBe(20);
        // Fill the non-critical share of the cap (2 of 4) by hand: the next request is shed over HTTP.
        const t1 = a.shedder.admit('default');
        const t2 = a.shedder.admit('default');
        const shed = await request(running.url, { dispatcher: agent });
        const body = await shed.body.text();
        expect([shed.statusCode, shed.headers['retry-after'], String(shed.headers['content-type']).split(';')[0]], a.name).toEqual([503, '1', 'application/problem+json']);
        expect(body, a.name).toContain('temporary-reduced-capacity');
        if (t1.admitted) t1.ticket.done();
        if (t2.admitted) t2.ticket.done();
      } finally {
        await running.close();
      }
    }
  }, 60_000);
});
