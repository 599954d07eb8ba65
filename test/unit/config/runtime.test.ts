import { describe, expect, it } from 'vitest';
import { buildRuntime, parseConfig } from '../../../packages/ratecontract/src/config/index.js';
import { demoConfig } from '../../../packages/cli/src/contract/demo.js';
import { ManualClock } from '../../../packages/ratecontract/src/index.js';

describe('buildRuntime on the demo contract', () => {
  it('builds one limiter per chain, an explicit unlimited route, and no route for unknown paths', async () => {
    const rt = await buildRuntime(demoConfig(), { clock: new ManualClock(0) });
    try {
      const otp = rt.route('POST', '/otp/send?x=1');
      expect(otp?.value.config.match).toBe('POST /otp/send');
      expect(otp?.value.limiter?.limits.map((l) => l.name)).toEqual(['otp-recipient', 'otp-tenant', 'otp-ip', 'otp-global']);
      const health = rt.route('GET', '/health');
      expect(health?.value.config.limits).toEqual([]);
      expect(health?.value.limiter).toBeUndefined();
      expect(rt.route('GET', '/nowhere')).toBeUndefined();
      expect(rt.route('HEAD', '/search')?.value.config.match).toBe('GET /search');
      expect([...rt.stores.keys()].sort()).toEqual(['(default)', 'abuse', 'shared']);
      expect(rt.guardOptions).toEqual({ trustProxy: 'loopback', advertise: 'authenticated' });
      // The per-recipient limit: 3 per 15 minutes for one phone, from any address.
      const limiter = otp?.value.limiter;
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await limiter?.check({ ip: `192.0.2.${i}`, body: { phone: '+15550100' } }))?.status ?? 0);
      expect(statuses).toEqual([200, 200, 200, 429]);
      expect((await limiter?.check({ ip: '192.0.2.9', body: { phone: '+15550199' } }))?.status).toBe(200);
    } finally {
      await rt.close();
    }
  });

  it('a limit used by two routes is one budget, and routes keep their own chains', async () => {
    const c = parseConfig(
      `limits:
  - { name: per-ip, purpose: shedding, limit: 2, window: 1m, key: ip }
  - { name: writes, purpose: shedding, limit: 100, window: 1m, key: ip }
routes:
  - { match: GET /a, limits: [per-ip] }
  - { match: POST /b, limits: [writes, per-ip] }
`,
      { file: 'shared.yaml' },
    );
    const rt = await buildRuntime(c, { clock: new ManualClock(0) });
    try {
      const a = rt.route('GET', '/a')?.value.limiter;
      const b = rt.route('POST', '/b')?.value.limiter;
      expect((await a?.check({ ip: '198.51.100.1' }))?.allowed).toBe(true);
      expect((await b?.check({ ip: '198.51.100.1' }))?.allowed).toBe(true);
      const third = await a?.check({ ip: '198.51.100.1' });
      expect(third?.allowed).toBe(false);
      expect(third?.limitName).toBe('per-ip');
      expect(b?.limits.map((l) => l.name)).toEqual(['writes', 'per-ip']);
    } finally {
      await rt.close();
    }
  });

  it('a plan table from the file: the plan named by a header, each plan its own figures; Content-Length as the cost', async () => {
    const c = parseConfig(
      `limits:
  - name: tenant
    purpose: shedding
    algorithm: fixed-window
    limit: 2
    window: 1m
    key: header.x-tenant
    plan: header.x-plan
    plans: { free: {}, pro: { limit: 5 } }
  - { name: bytes, purpose: shedding, limit: 1000, window: 1m, key: ip, costFromContentLength: true }
routes:
  - { match: GET /a, limits: [tenant] }
  - { match: POST /up, limits: [bytes] }
`,
      { file: 'plans.yaml' },
    );
    const rt = await buildRuntime(c, { clock: new ManualClock(0) });
    try {
      const a = rt.route('GET', '/a')?.value.limiter;
      const ctx = (plan: string) => ({ headers: { 'x-tenant': 't', 'x-plan': plan } });
      expect((await a?.check(ctx('free')))?.results[0]).toMatchObject({ allowed: true, limit: 2, remaining: 1 });
      expect((await a?.check(ctx('pro')))?.results[0]).toMatchObject({ allowed: true, limit: 5, remaining: 3 });
      expect((await a?.check(ctx('free')))?.allowed).toBe(false);
      const up = rt.route('POST', '/up')?.value.limiter;
      expect((await up?.check({ ip: '192.0.2.1', headers: { 'content-length': '600' } }))?.results[0]).toMatchObject({ allowed: true, remaining: 400 });
      expect((await up?.check({ ip: '192.0.2.1', headers: { 'content-length': '600' } }))?.allowed).toBe(false);
    } finally {
      await rt.close();
    }
  });

  it('builds memory stores with their bounds', async () => {
    const rt = await buildRuntime(parseConfig('stores:\n  m: { type: memory, maxKeys: 10, overflowSlots: 4 }\nlimits: []\nroutes: []\n', { file: 'm.yaml' }));
    expect(rt.stores.get('m')).toMatchObject({ kind: 'memory', maxKeys: 10, overflowSlots: 4 });
    await rt.close();
  });
});

describe('buildRuntime with previous (a reload)', () => {
  const first = `stores:
  kept: { type: memory }
  changed: { type: memory }
limits:
  - { name: a, purpose: shedding, limit: 2, window: 1m, key: ip, store: kept }
  - { name: b, purpose: shedding, limit: 2, window: 1m, key: ip, store: changed }
  - { name: c, purpose: shedding, limit: 2, window: 1m, key: ip }
routes:
  - { match: GET /a, limits: [a] }
  - { match: GET /b, limits: [b] }
  - { match: GET /c, limits: [c] }
`;
  it('takes over unchanged stores (state survives) and builds changed ones anew', async () => {
    const clock = new ManualClock(0);
    const old = await buildRuntime(parseConfig(first, { file: 'a.yaml' }), { clock });
    for (const p of ['/a', '/b', '/c']) {
      const l = old.route('GET', p)?.value.limiter;
      for (let i = 0; i < 2; i++) expect((await l?.check({ ip: '192.0.2.1' }))?.allowed).toBe(true);
    }
    const next = await buildRuntime(parseConfig(first.replace('changed: { type: memory }', 'changed: { type: memory, maxKeys: 10 }'), { file: 'a.yaml' }), {
      clock,
      previous: old,
    });
    try {
      expect(next.stores.get('kept')).toBe(old.stores.get('kept'));
      expect(next.stores.get('(default)')).toBe(old.stores.get('(default)'));
      expect(next.stores.get('changed')).not.toBe(old.stores.get('changed'));
      // Spent budgets stay spent on the stores taken over; the rebuilt store starts afresh.
      expect((await next.route('GET', '/a')?.value.limiter?.check({ ip: '192.0.2.1' }))?.allowed).toBe(false);
      expect((await next.route('GET', '/c')?.value.limiter?.check({ ip: '192.0.2.1' }))?.allowed).toBe(false);
      expect((await next.route('GET', '/b')?.value.limiter?.check({ ip: '192.0.2.1' }))?.allowed).toBe(true);
    } finally {
      await old.close();
      await next.close();
    }
  });

  it('leaves a taken-over Redis connection open when the previous runtime closes', async () => {
    const closed: string[] = [];
    const connectRedis = (url: string): { client: never; close(): Promise<void> } => ({
      client: { eval: () => Promise.reject(new Error('offline')), evalsha: () => Promise.reject(new Error('offline')) } as never,
      close: () => {
        closed.push(url);
        return Promise.resolve();
      },
    });
    const text = `stores:
  r: { type: redis, url: redis://127.0.0.1:1/0 }
limits:
  - { name: a, purpose: shedding, limit: 2, window: 1m, key: ip, store: r }
routes:
  - { match: GET /a, limits: [a] }
`;
    const old = await buildRuntime(parseConfig(text, { file: 'r.yaml' }), { connectRedis });
    const next = await buildRuntime(parseConfig(text, { file: 'r.yaml' }), { connectRedis, previous: old });
    expect(next.stores.get('r')).toBe(old.stores.get('r'));
    await old.close();
    expect(closed).toEqual([]);
    await next.close();
    expect(closed).toEqual(['redis://127.0.0.1:1/0']);
  });
});
