/**
 * Smoke test of the admin page, in the everyday suite: `ratecontract serve`
 * spawned on the demo contract, its admin port opened in Debian's Chromium
 * (playwright-core), the page read as rendered once its first poll is done.
 * The page's charts, its escaping, rls's page and a user's contract are in
 * test/browser, run by `npm run test:full`. Where /usr/bin/chromium is
 * missing the test says so and skips, as test/browser does, except on CI
 * (`CI=true`), where scripts/ensure-chromium.sh installs it and a missing
 * browser fails.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoConfig } from '../../packages/cli/src/contract/demo.js';
import { serve, type Served } from '../integration/serve/helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM && process.env.CI !== 'true') console.warn(`admin page smoke test skipped: ${CHROMIUM} is missing (bash scripts/ensure-chromium.sh installs it)`);

describe.skipIf(!HAVE_CHROMIUM && process.env.CI !== 'true')('the admin page of a spawned `ratecontract serve`, in headless Chromium', () => {
  let profile = '';
  let context: BrowserContext | undefined;
  let s: Served | undefined;

  beforeAll(async () => {
    profile = mkdtempSync(join(tmpdir(), 'rc-chromium-smoke-'));
    [context, s] = await Promise.all([
      chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: ARGS, headless: true, timeout: 30_000, viewport: { width: 1280, height: 1000 } }),
      serve(['--port', '0', '--admin-port', '0']),
    ]);
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await s?.stop();
    if (profile !== '') rmSync(profile, { recursive: true, force: true });
  });

  it('goes live and lists the demo\'s limits in force, with purpose and fail mode, in the table and the cards, with no request off the admin port', async () => {
    const adminUrl = (s as Served).adminUrl as string;
    const page = await (context as BrowserContext).newPage();
    const external: string[] = [];
    page.on('request', (req) => {
      if (!req.url().startsWith(adminUrl)) external.push(req.url());
    });
    await page.goto(`${adminUrl}/`);
    await page.waitForSelector('#status[data-state="live"]', { timeout: 20_000 });
    // Each column names its field of the contract document (data-field); its heading is in words.
    const headers: string[] = [];
    for (const th of await page.locator('#contract thead th').all()) headers.push((await th.getAttribute('data-field')) ?? '');
    expect(await page.locator('#contract thead').innerText()).toContain('fail mode');
    const rows: Array<Record<string, string>> = [];
    for (const tr of await page.locator('#contract tbody tr').all()) {
      const cells = await tr.locator('td').allInnerTexts();
      rows.push(Object.fromEntries(cells.map((c, i) => [headers[i] || `#${i}`, c])));
    }
    const inForce = demoConfig().compiled.map((l) => ({ name: l.name, purpose: l.purpose, onError: l.onError }));
    expect(inForce).toHaveLength(8);
    expect(await page.locator('#contract tbody td.empty').count(), 'the page says "no limits" while limits are in force').toBe(0);
    expect(rows.map((r) => ({ name: r.name, purpose: r.purpose, onError: r.onError }))).toEqual(inForce);
    const cards = await page.locator('#limits .limit h3').allInnerTexts();
    expect([...cards].sort()).toEqual(inForce.map((l) => l.name).sort());
    expect(external).toEqual([]);
    await page.close();
  });
});
