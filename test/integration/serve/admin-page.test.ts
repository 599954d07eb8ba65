import { describe, expect, it } from 'vitest';
import { renderAdminPage } from '../../../packages/cli/src/host/admin-page.js';

describe('renderAdminPage', () => {
  const page = renderAdminPage();

  it('is one self-contained document: inline style and script, nothing loaded from elsewhere', () => {
    expect(page.startsWith('<!doctype html>')).toBe(true);
    expect(page).toMatch(/<style>[\s\S]+<\/style>/);
    expect(page).toMatch(/<script>[\s\S]+<\/script>/);
    expect(page).not.toMatch(/<script[^>]+src=/i);
    expect(page).not.toMatch(/<link\b/i);
    expect(page).not.toMatch(/@import|url\(/i);
    // The only absolute URL is the SVG namespace, an identifier that is never fetched.
    expect([...page.matchAll(/https?:\/\/[^\s"')]+/g)].map((m) => m[0])).toEqual(['http://www.w3.org/2000/svg']);
    expect(page).toContain("connect-src 'self'");
  });

  it('reads the contract and polls the stats every second, relative to where it is served', () => {
    expect(page).toContain('getJson("stats.json")');
    expect(page).toContain('getJson("contract")');
    expect(page).toContain('setTimeout(poll, 1000)');
  });

  it('never builds markup from data: text and attributes only', () => {
    expect(page).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
    expect(page).toContain('textContent');
  });
});
