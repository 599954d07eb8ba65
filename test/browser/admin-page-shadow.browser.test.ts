/**
 * The admin page's shadow section in headless Chromium: a known mix (two
 * heavy legitimate principals and 300 abusive keys) through a limit in
 * shadow keyed by principal and one keyed by IP; the page shows a section
 * per shadowed limit with time in shadow, would-reject rate and top-10
 * share, the two batch jobs by name at the top of the first, and only
 * keyed hashes (never an address) in the second.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, ManualClock, type Limiter } from '../../packages/ratecontract/src/index.js';
import { shadowSnapshot } from '../../packages/cli/src/host/shadow.js';
import { startAdminServer, type AdminTestServer } from '../integration/serve/admin-server.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM && process.env.CI !== 'true') console.warn(`admin page shadow browser test skipped: ${CHROMIUM} is missing (bash scripts/ensure-chromium.sh installs it)`);

const HEAVY = ['acme-nightly-batch', 'globex-etl'];

describe.skipIf(!HAVE_CHROMIUM && process.env.CI !== 'true')('admin page: the shadow section, in headless Chromium', () => {
  let browser: Browser;
  let server: AdminTestServer;
  let limiters: Array<{ name: string; limiter: Limiter }>;
  const clock = new ManualClock(1_700_000_040_000);

  beforeAll(async () => {
    const tenant = createLimiter({ clock, limits: [{ name: 'tenant', purpose: 'shedding', algorithm: 'fixed-window', limit: 20, window: '1m', key: 'principal', shadow: true }] });
    const perIp = createLimiter({ clock, limits: [{ name: 'per-ip', purpose: 'abuse', algorithm: 'fixed-window', limit: 20, window: '1m', key: 'ip', shadow: true }] });
    limiters = [{ name: 'GET /api/*', limiter: tenant }, { name: 'POST /login', limiter: perIp }];
    for (let minute = 0; minute < 5; minute++) {
      for (let i = 0; i < 200; i++) {
        for (const h of HEAVY) tenant.checkSync({ principal: h });
        perIp.checkSync({ ip: '198.51.100.7' });
      }
      for (let a = 0; a < 300; a++) {
        for (let i = 0; i < 25; i++) {
          tenant.checkSync({ principal: `bot-${a}` });
          perIp.checkSync({ ip: `10.0.${a >> 8}.${a & 255}` });
        }
      }
      clock.advance(60_000);
    }
    server = await startAdminServer({ contract: () => ({ rows: [], findings: [] }), stats: () => ({ now: clock.now(), windowMs: 300_000, limits: [], stores: [], replicas: null }), metrics: () => Promise.resolve(''), shadow: () => shadowSnapshot(limiters, clock.now()) });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true, timeout: 30_000 });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('a section per shadowed limit: the two batch jobs by name on top, the rate and the top-10 share; IPs only as hashes', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const external: string[] = [];
    page.on('request', (req) => {
      if (!req.url().startsWith(server.url)) external.push(req.url());
    });
    await page.goto(server.url);
    const tenant = page.locator('#shadow .shadow-limit[data-limit="tenant"]');
    await tenant.waitFor({ timeout: 10_000 });
    expect(await page.locator('#shadow').isVisible()).toBe(true);
    expect(await page.locator('#shadow .shadow-limit').count()).toBe(2);
    const keys = await Promise.all((await tenant.locator('tbody tr').all()).map((r) => r.getAttribute('data-key')));
    expect(keys.slice(0, 2).sort()).toEqual([...HEAVY].sort());
    expect(keys.length).toBe(10);
    const meta = tenant.locator('.meta').first();
    const report = limiters[0]?.limiter.shadowReport()[0];
    expect(Number(await meta.getAttribute('data-rate'))).toBeCloseTo(report?.wouldRejectRate ?? -1, 10);
    expect(Number(await meta.getAttribute('data-top10'))).toBeCloseTo(report?.top10Share ?? -1, 10);
    const text = await meta.innerText();
    expect(text).toMatch(/in shadow 5 min · would reject 23\.\d% of 39500 checks \(9300\) in the last 5 min · top 10 keys: \d+\.\d% of would-be rejections/);

    const perIp = page.locator('#shadow .shadow-limit[data-limit="per-ip"]');
    const all = await page.locator('#shadow').innerText();
    expect(all).not.toMatch(/198\.51\.100|10\.0\.\d/);
    const ipKeys = await Promise.all((await perIp.locator('tbody tr').all()).map(async (r) => (await r.getAttribute('data-key')) ?? ''));
    expect(ipKeys.length).toBe(10);
    for (const k of ipKeys) expect(k).toMatch(/^#[A-Za-z0-9_-]{22}$/);
    expect(external).toEqual([]);
    await page.close();
  });

  it('hides the section when no limit is in shadow', async () => {
    const saved = limiters;
    limiters = [];
    try {
      const page = await browser.newPage({ bypassCSP: true });
      await page.goto(server.url);
      await page.locator('#status[data-state="live"]').waitFor({ timeout: 10_000 });
      expect(await page.locator('#shadow').isVisible()).toBe(false);
      await page.close();
    } finally {
      limiters = saved;
    }
  });
});
