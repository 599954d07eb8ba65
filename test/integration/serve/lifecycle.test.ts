import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, upstreamServer } from './helpers.js';

const V1 = `limits:
  - { name: per-ip, purpose: shedding, limit: 2, window: 1m, key: ip }
routes:
  - { match: GET /a, limits: [per-ip] }
`;
const V2 = `limits:
  - { name: per-ip, purpose: shedding, limit: 2, window: 1m, key: ip }
  - { name: b-ip, purpose: shedding, limit: 1, window: 1m, key: ip }
routes:
  - { match: GET /a, limits: [per-ip] }
  - { match: GET /b, limits: [b-ip] }
`;

async function statuses(url: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await fetch(url);
    await r.body?.cancel();
    out.push(r.status);
  }
  return out;
}

describe('ratecontract serve: reload', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rc-reload-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('SIGHUP takes a valid new config (state of unchanged limits survives) and refuses an invalid one, keeping the old', async () => {
    const file = join(dir, 'hup.yaml');
    writeFileSync(file, V1);
    const s = await serve(['--config', file, '--port', '0', '--admin-port', '0']);
    try {
      expect(await statuses(`${s.url}/a`, 3)).toEqual([200, 200, 429]);
      expect(await statuses(`${s.url}/b`, 2)).toEqual([404, 404]);
      writeFileSync(file, V2);
      s.signal('SIGHUP');
      const ok = await s.waitForLog((l) => l.event === 'reload');
      expect(ok).toMatchObject({ ok: true, reason: 'SIGHUP', limits: 2, routes: 2, keptStores: ['(default)'] });
      // per-ip did not change: its spent budget stays spent.
      expect(await statuses(`${s.url}/a`, 1)).toEqual([429]);
      expect(await statuses(`${s.url}/b`, 2)).toEqual([200, 429]);
      writeFileSync(file, V2.replace('window: 1m, key: ip }\nroutes', 'window: 15x, key: ip }\nroutes'));
      s.signal('SIGHUP');
      const refused = await s.waitForLog((l) => l.event === 'reload' && l.ok === false);
      expect(refused.error).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: limits\\[1\\]\\.window: "15x" is not a duration.* \\(line 3, column 48\\)$`));
      expect(refused.level).toBe(40);
      // The old contract still runs.
      expect(await statuses(`${s.url}/b`, 1)).toEqual([429]);
      const contract = (await (await fetch(`${s.adminUrl}/contract`)).json()) as { rows: Array<{ name: string }> };
      expect(contract.rows.map((r) => r.name)).toEqual(['per-ip', 'b-ip']);
      const metrics = await (await fetch(`${s.adminUrl}/metrics`)).text();
      expect(metrics).toContain('ratecontract_config_reloads_total{result="ok"} 1');
      expect(metrics).toContain('ratecontract_config_reloads_total{result="refused"} 1');
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });

  it('--watch reloads when the file changes', async () => {
    const file = join(dir, 'watch.yaml');
    writeFileSync(file, V1);
    const s = await serve(['--config', file, '--watch', '--port', '0', '--admin-port', '0']);
    try {
      expect(await statuses(`${s.url}/b`, 1)).toEqual([404]);
      writeFileSync(file, V2);
      expect(await s.waitForLog((l) => l.event === 'reload')).toMatchObject({ ok: true, reason: 'watch' });
      expect(await statuses(`${s.url}/b`, 2)).toEqual([200, 429]);
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });
});

describe('ratecontract serve: SIGTERM', () => {
  it('drains an in-flight request (it completes), refuses new connections, closes and exits 0', async () => {
    let arrived: (() => void) | undefined;
    const came = new Promise<void>((resolve) => (arrived = resolve));
    const up = await upstreamServer((req, res) => {
      arrived?.();
      setTimeout(() => res.end('finished late'), 800);
    });
    const s = await serve(['--upstream', up.url, '--port', '0', '--admin-port', '0']);
    try {
      const inflight = fetch(`${s.url}/slow`);
      await came;
      s.signal('SIGTERM');
      await s.waitForLog((l) => l.event === 'draining');
      const r = await inflight;
      expect(r.status).toBe(200);
      expect(await r.text()).toBe('finished late');
      expect(await s.exited).toBe(0);
      expect(s.logs.find((l) => l.event === 'draining')).toMatchObject({ reason: 'SIGTERM', inFlight: 1 });
      expect(s.logs.find((l) => l.event === 'stopped')).toMatchObject({ reason: 'SIGTERM' });
      await expect(fetch(`${s.url}/after`)).rejects.toThrow();
    } finally {
      await s.stop();
      await up.close();
    }
  });
});
