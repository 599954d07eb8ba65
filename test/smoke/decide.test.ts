/**
 * Smoke test of `ratecontract decide`, in the everyday suite: the built
 * command spawned and asked as nginx's auth_request asks it (X-Original-*),
 * a 429 with its exact Retry-After and RateLimit fields, and exit 0 on
 * SIGTERM. The real proxies (nginx, Caddy, HAProxy), the emitted configs and
 * the fail modes with decide stopped are in test/integration/decide.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnServer } from '../integration/serve/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'rc-decide-smoke-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('ratecontract decide, spawned', () => {
  it('allows twice with the RateLimit fields, then answers 429 with the exact Retry-After; stops with exit 0 on SIGTERM', async () => {
    const file = join(dir, 'c.yaml');
    writeFileSync(file, 'limits:\n  - { name: login-ip, purpose: abuse, limit: 2, window: 1m, key: ip }\nroutes:\n  - { match: POST /login, limits: [login-ip] }\nhttp:\n  trustProxy: loopback\n  advertise: always\n');
    const d = await spawnServer('decide', ['--config', file, '--port', '0', '--admin-port', '0']);
    const ask = (): Promise<Response> => fetch(`${d.url}/auth`, { headers: { 'x-original-method': 'POST', 'x-original-uri': '/login', 'x-real-ip': '203.0.113.1' } });
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 3; i++) {
      last = await ask();
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(last?.headers.get('retry-after')).toBe('30');
    expect(last?.headers.get('ratelimit')).toMatch(/^"login-ip";r=0;t=30/);
    expect(await d.stop()).toBe(0);
  }, 30_000);
});
