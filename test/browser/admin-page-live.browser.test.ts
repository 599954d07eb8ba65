/**
 * The admin page as an operator meets it: `ratecontract serve` spawned as a
 * user runs it, its admin port opened in Debian's Chromium, and the page read
 * as rendered. The contract table must list the limits in force (names,
 * purpose, fail mode) as the compiler sees them, never "no limits".
 *
 * admin-page.browser.test.ts serves the page from a test server that hands it
 * an array of rows, the shape the page expected; the service answered
 * `/contract` with an object, so the page said "no limits" and no test saw it.
 * This file talks only to the real service. `ratecontract rls` serves the
 * same page on its admin port, with its rules as the contract's rows.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type RateContractConfig } from '../../packages/ratecontract/src/config/index.js';
import { demoConfig } from '../../packages/cli/src/contract/demo.js';
import { auditContract } from '../../packages/cli/src/contract/audit.js';
import { serve, type Served } from '../integration/serve/helpers.js';
import { startRls } from '../integration/rls/helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM && process.env.CI !== 'true') console.warn(`live admin page browser test skipped: ${CHROMIUM} is missing (bash scripts/ensure-chromium.sh installs it)`);

/** A user's contract, unlike the demo: a fail-open limit, a shadow limit, one store. */
const CONFIG = `limits:
  - { name: api-tenant, purpose: shedding, onError: open, limit: 100, window: 1m, key: principal, reason: capacity of the API }
  - { name: signup-ip, purpose: abuse, limit: 5, window: 1h, key: ip, shadow: true, reason: account farming from one address }
routes:
  - { match: POST /signup, limits: [signup-ip] }
  - { match: "* /api/*", limits: [api-tenant] }
http:
  identify: { header: x-user }
  trustProxy: loopback
`;

interface Rendered {
  /** Each column's field of the contract document's rows (`data-field`). */
  readonly headers: string[];
  readonly rows: Array<Record<string, string>>;
  readonly empty: boolean;
  readonly cards: string[];
  readonly findings: string[];
  /** The column headings as the operator reads them. */
  readonly headings: string[];
}

/** What the page shows once its first poll is done: the contract table cell by cell, the limit cards, the findings. */
async function readPage(page: Page): Promise<Rendered> {
  await page.waitForSelector('#status[data-state="live"]', { timeout: 20_000 });
  const headings = await page.locator('#contract thead th').allInnerTexts();
  const headers: string[] = [];
  for (const th of await page.locator('#contract thead th').all()) headers.push((await th.getAttribute('data-field')) ?? '');
  const rows: Array<Record<string, string>> = [];
  for (const tr of await page.locator('#contract tbody tr').all()) {
    const cells = await tr.locator('td').allInnerTexts();
    rows.push(Object.fromEntries(cells.map((c, i) => [headers[i] || `#${i}`, c])));
  }
  const empty = (await page.locator('#contract tbody td.empty').count()) > 0;
  const cards = await page.locator('#limits .limit h3').allInnerTexts();
  const findings: string[] = [];
  for (const li of await page.locator('#findings li').all()) findings.push((await li.getAttribute('data-code')) ?? '');
  return { headings, headers, rows, empty, cards, findings };
}

async function openAdmin(context: BrowserContext, adminUrl: string): Promise<{ page: Page; external: string[] }> {
  const page = await context.newPage();
  const external: string[] = [];
  page.on('request', (req) => {
    if (!req.url().startsWith(adminUrl)) external.push(req.url());
  });
  await page.goto(`${adminUrl}/`);
  return { page, external };
}

function expectContract(shown: Rendered, config: RateContractConfig): void {
  const inForce = config.compiled.map((l) => ({ name: l.name, purpose: l.purpose, onError: l.onError }));
  expect(inForce.length).toBeGreaterThan(0);
  expect(shown.empty, 'the page says "no limits" while limits are in force').toBe(false);
  for (const column of ['name', 'purpose', 'onError', 'failMode', 'bound', 'key']) expect(shown.headers).toContain(column);
  // The clauses are headed in words, as the banner heads them, and the table stays readable: the rest of a row is under "more".
  expect(shown.headings).toEqual(['limit', 'purpose', 'key', 'algorithm', 'bound', 'status', 'on error', 'fail mode', 'store', 'shadow', 'reason', 'more']);
  expect(shown.rows.map((r) => ({ name: r.name, purpose: r.purpose, onError: r.onError }))).toEqual(inForce);
  // Each row's fail mode in words names the same mode as its onError.
  for (const r of shown.rows) expect(r.failMode).toMatch(new RegExp(`^${r.onError ?? '?'}\\b`));
  // The cards above (from /stats.json) and the table below (from /contract) list the same limits.
  expect([...shown.cards].sort()).toEqual(inForce.map((l) => l.name).sort());
  expect(shown.findings).toEqual(auditContract(config).findings.map((f) => f.code));
}

describe.skipIf(!HAVE_CHROMIUM && process.env.CI !== 'true')('the admin page of a running `ratecontract serve`, in headless Chromium', () => {
  let profile: string;
  let context: BrowserContext;
  let dir: string;

  beforeAll(async () => {
    profile = mkdtempSync(join(tmpdir(), 'rc-chromium-'));
    dir = mkdtempSync(join(tmpdir(), 'rc-admin-live-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: ARGS, headless: true, timeout: 30_000, viewport: { width: 1280, height: 1000 } });
  });

  afterAll(async () => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('the demo: the contract table lists its 8 limits with purpose and fail mode, as the cards do', async () => {
    const s: Served = await serve(['--port', '0', '--admin-port', '0']);
    try {
      const { page, external } = await openAdmin(context, s.adminUrl as string);
      expectContract(await readPage(page), demoConfig());
      expect(external).toEqual([]);
      await page.close();
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });

  it('a contract file: its limits, a fail-open and a shadow one among them', async () => {
    const file = join(dir, 'contract.yaml');
    writeFileSync(file, CONFIG);
    const s: Served = await serve(['--config', file, '--port', '0', '--admin-port', '0']);
    try {
      const { page } = await openAdmin(context, s.adminUrl as string);
      const shown = await readPage(page);
      expectContract(shown, await loadConfig(file));
      expect(shown.rows.find((r) => r.name === 'signup-ip')?.shadow).toBe('true');
      await page.close();
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });

  it('rls: the same page, its rules as the rows and their limits as the cards', async () => {
    const conf = mkdtempSync(join(dir, 'rls-'));
    writeFileSync(
      join(conf, 'messaging.yaml'),
      [
        'domain: messaging',
        'descriptors:',
        '  - key: to_number',
        '    rate_limit: { unit: hour, requests_per_unit: 5, purpose: abuse, reason: SMS pumping to one number }',
        '  - key: message_type',
        '    value: marketing',
        '    rate_limit: { unit: day, requests_per_unit: 1000 }',
        '',
      ].join('\n'),
    );
    const r = await startRls(['--config', conf]);
    try {
      const doc = (await (await fetch(`${r.adminUrl as string}/contract`)).json()) as { rows: Array<Record<string, unknown>>; findings: Array<{ code: string }> };
      const { page, external } = await openAdmin(context, r.adminUrl as string);
      const shown = await readPage(page);
      expect(shown.empty).toBe(false);
      for (const column of ['rule', 'path', 'bound', 'purpose', 'onError']) expect(shown.headers).toContain(column);
      expect(shown.rows).toHaveLength(2);
      expect(shown.rows.map((row) => row.path)).toEqual(['messaging.to_number', 'messaging.message_type_marketing']);
      expect(shown.rows.map((row) => row.rule)).toEqual(doc.rows.map((row) => row.rule));
      expect(shown.rows.map((row) => row.bound)).toEqual(['5 per hour', '1000 per day']);
      expect(shown.rows[0]?.onError).toBe('closed');
      // The cards (from /stats.json) are the rules' limits, named by rule.
      expect([...shown.cards].sort()).toEqual(doc.rows.map((row) => String(row.rule)).sort());
      expect(shown.findings).toEqual(doc.findings.map((f) => f.code));
      expect(shown.findings.length).toBeGreaterThan(0);
      expect(external).toEqual([]);
      await page.close();
    } finally {
      expect(await r.stop()).toBe(0);
    }
  });
});
