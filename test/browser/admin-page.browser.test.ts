import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRuntime, type ContractRuntime } from '../../packages/ratecontract/src/config/index.js';
import { demoConfig } from '../../packages/cli/src/contract/demo.js';
import { auditContract } from '../../packages/cli/src/contract/audit.js';
import type { Limiter } from '../../packages/ratecontract/src/index.js';
import { prometheusMetrics, type PrometheusMetrics } from '../../packages/ratecontract/src/metrics/index.js';
import { LiveStats, type StatsSnapshot } from '../../packages/cli/src/host/live-stats.js';
import { parseExposition, sampleValue } from '../unit/metrics/helpers.js';
import { startAdminServer, type AdminTestServer } from '../integration/serve/admin-server.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** CI installs Debian's chromium (scripts/ensure-chromium.sh), so there a missing browser fails; elsewhere the suite says why it skips. */
const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM && process.env.CI !== 'true') console.warn(`admin page browser test skipped: ${CHROMIUM} is missing (bash scripts/ensure-chromium.sh installs it)`);

describe.skipIf(!HAVE_CHROMIUM && process.env.CI !== 'true')('admin page in headless Chromium', () => {
  let browser: Browser;
  let runtime: ContractRuntime;
  let server: AdminTestServer;
  let stats: LiveStats;
  let metrics: PrometheusMetrics;
  let limiters: Array<{ name: string; limiter: Limiter }>;

  beforeAll(async () => {
    const config = demoConfig();
    runtime = await buildRuntime(config);
    limiters = runtime.routes.flatMap((r) => (r.limiter === undefined ? [] : [{ name: r.config.match, limiter: r.limiter }]));
    stats = new LiveStats();
    const registry = new Registry();
    metrics = prometheusMetrics({ registry, limiters: () => limiters.map((l) => l.limiter) });
    const contract = auditContract(config);
    server = await startAdminServer({ contract: () => contract, stats: () => stats.snapshot(limiters), metrics: () => registry.metrics() });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true, timeout: 30_000 });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    metrics?.close();
    stats?.close();
    await runtime?.close();
  });

  /** Opens the page; `external` collects every request that did not go to the admin server (there must be none). */
  async function openPage(url: string): Promise<{ page: Page; external: string[] }> {
    // The page's own CSP forbids string evaluation, which waitForFunction needs; without it the escaping test also proves
    // that the page needs no CSP to stay safe (the CSP is a second line).
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 }, bypassCSP: true });
    const external: string[] = [];
    page.on('request', (req) => {
      if (!req.url().startsWith(url)) external.push(req.url());
    });
    await page.goto(url);
    return { page, external };
  }

  it('shows the contract, and its charts move when traffic is rejected', async () => {
    const { page, external } = await openPage(server.url);
    await page.waitForSelector('#contract tbody tr[data-limit="otp-recipient"]', { timeout: 10_000 });
    const contractText = await page.locator('#contract').innerText();
    for (const row of auditContract(demoConfig()).rows) expect(contractText).toContain(row.name);
    for (const heading of ['limit', 'purpose', 'key', 'bound', 'fail mode']) expect(await page.locator('#contract thead').innerText()).toContain(heading);
    // Every other field of a row is under "more", one click away.
    const more = page.locator('#contract tbody tr[data-limit="otp-recipient"] td.more details');
    await more.locator('summary').click();
    expect(await more.innerText()).toMatch(/windowMs\s+900000/);

    const chart = page.locator('.limit[data-limit="otp-recipient"] svg.chart');
    await chart.waitFor({ timeout: 10_000 });
    expect(await chart.getAttribute('data-rejected')).toBe('0');
    const flat = await chart.locator('polyline[data-series="rejected"]').getAttribute('points');

    const otp = limiters.find((l) => l.name === 'POST /otp/send')?.limiter as Limiter;
    let rejected = 0;
    for (let i = 0; i < 10; i++) {
      const d = await otp.check({ ip: '203.0.113.7', principal: 'tenant-a', body: { phone: '+15550100' } });
      if (!d.allowed) rejected++;
    }
    expect(rejected).toBe(7);

    // The page polls every second: allow a generous budget on a loaded machine.
    await page.waitForFunction(
      // A string: it runs in the page, and this project's TypeScript has no DOM types.
      `document.querySelector('.limit[data-limit="otp-recipient"] svg.chart')?.getAttribute('data-rejected') === '7'`,
      undefined,
      { timeout: 15_000, polling: 200 },
    );
    expect(await chart.locator('polyline[data-series="rejected"]').getAttribute('points')).not.toBe(flat);
    expect(await chart.getAttribute('data-admitted')).toBe('3');
    expect(await page.locator('.limit[data-limit="otp-recipient"] .totals').innerText()).toContain('rejected 7');

    const storesText = await page.locator('#stores').innerText();
    expect(storesText).toContain('abuse');
    expect(storesText).toContain('shared');
    expect(await page.locator('#stores tr[data-store="abuse"] td').nth(1).innerText()).toBe('closed');
    // The OTP chain spans two stores, so its calls go through the guards and are timed.
    expect(await page.locator('#stores tr[data-store="abuse"] td').nth(6).innerText()).toMatch(/^\d+\.\d\d ms \(\d+ calls\)$/);

    // The same traffic, scraped as Prometheus text from the same server.
    const scraped = parseExposition(await (await fetch(new URL('/metrics', server.url))).text()).samples;
    expect(sampleValue(scraped, 'ratecontract_decisions_total', { limit: 'otp-recipient', outcome: 'rejected' })).toBe(7);

    const shot = join(tmpdir(), `ratecontract-admin-${process.pid}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`admin page screenshot: ${shot}`);
    expect(external).toEqual([]);
    await page.close();
  });

  it('shows an answer of /contract that is not a contract document as an error, never as "no limits"', async () => {
    const wrong = await startAdminServer({ contract: () => auditContract(demoConfig()).rows, stats: () => stats.snapshot(limiters), metrics: () => Promise.resolve('') });
    try {
      const { page } = await openPage(wrong.url);
      await page.waitForSelector('#status[data-state="error"]', { timeout: 10_000 });
      expect(await page.locator('#status').innerText()).toBe('/contract: not a contract document');
      expect(await page.locator('#contract tbody').innerText()).toBe('/contract answered something other than { rows, findings }');
      await page.close();
    } finally {
      await wrong.close();
    }
  });

  it('shows names and reasons as text, never as markup', async () => {
    const hostile = '<img src=x onerror="window.__pwned=1">';
    const snapshot: StatsSnapshot = {
      now: Date.now(),
      windowMs: 10_000,
      stepMs: 1000,
      replicas: 1,
      limits: [
        {
          name: `<svg onload="window.__pwned=2">`,
          limiters: ['GET /x'],
          purpose: 'abuse',
          onError: 'closed',
          shadow: false,
          store: hostile,
          totals: { admitted: 1, rejected: 1, shadowRejected: 0, fallback: 0 },
          series: { admitted: new Array<number>(10).fill(0), rejected: new Array<number>(10).fill(0), shadowRejected: new Array<number>(10).fill(0), fallback: new Array<number>(10).fill(0) },
        },
      ],
      stores: [{ name: hostile, state: 'open', failureRate: 1, calls: 3, inFlight: 0, ready: false, p99Ms: null, latencySamples: 0 }],
    };
    const evil = await startAdminServer({
      contract: () => ({
        rows: [{ name: 'x"><script>window.__pwned=3</script>', reason: hostile, nested: { a: '</td><b>' } }],
        findings: [{ code: '<i>RC</i>', severity: 'warn', subject: hostile, message: '<b>bold</b>' }],
      }),
      stats: () => snapshot,
      metrics: () => Promise.resolve(''),
    });
    try {
      const { page, external } = await openPage(evil.url);
      await page.waitForSelector('#stores tbody tr', { timeout: 10_000 });
      await page.waitForSelector('#contract tbody tr', { timeout: 10_000 });
      expect(await page.evaluate('typeof window.__pwned')).toBe('undefined');
      expect(await page.locator('body img, main b, main script, .limit svg:not(.chart)').count()).toBe(0);
      expect(await page.locator('#contract').innerText()).toContain(hostile);
      expect(await page.locator('#findings').innerText()).toBe(`warn <i>RC</i> ${hostile}: <b>bold</b>`);
      expect(await page.locator('#findings i, #findings b').count()).toBe(0);
      expect(await page.locator('#stores').innerText()).toContain(hostile);
      expect(await page.locator('.limit h3').innerText()).toBe('<svg onload="window.__pwned=2">');
      expect(external).toEqual([]);
      await page.close();
    } finally {
      await evil.close();
    }
  });
});
