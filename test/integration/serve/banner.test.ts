import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../packages/ratecontract/src/config/index.js';
import { demoConfig } from '../../../packages/cli/src/contract/demo.js';
import { BANNER_COLUMNS, contractTable, demoExamples, formatTable, GLUE, wrapText } from '../../../packages/cli/src/serve/banner.js';

const words = fc.array(fc.stringMatching(/^[a-z0-9/+=:.,()-]{1,30}$/), { minLength: 0, maxLength: 12 }).map((w) => w.join(' '));

describe('the serve banner fits 100 columns', () => {
  it('the demo contract table and the examples, for the longest loopback URL', () => {
    const lines = [...contractTable(demoConfig()).split('\n'), ...demoExamples('http://127.0.0.1:65535').split('\n')];
    expect(lines.filter((l) => l.length > BANNER_COLUMNS)).toEqual([]);
    expect(BANNER_COLUMNS).toBe(100);
  });

  it('the demo table keeps every limit, bound and route, and names one limit "1 limit"', () => {
    const table = contractTable(demoConfig());
    const flat = table.replace(/\s+/g, ' ');
    for (const l of demoConfig().compiled) expect(table).toMatch(new RegExp(`^${l.name} `, 'm'));
    expect(flat).toContain('sliding-window: 100 per aligned 1h window, under 2N = 200 in any 3600 s interval (two-counter estimate)');
    // A formula is never split: "5 + 40/h x t" on one line.
    expect(table).toMatch(/^\s+5 \+ 40\/h x t$/m);
    expect(table).toMatch(/^POST \/otp\/send {2}otp-recipient, otp-tenant, otp-ip, otp-global$/m);
    expect(table).toMatch(/^GET \/health {5}none \(unlimited\)$/m);
    expect(table).not.toContain(GLUE);
    const one = parseConfig('limits:\n  - { name: only, purpose: shedding, limit: 1, window: 1s, key: ip }\nroutes:\n  - { match: GET /, limits: [only] }\n', { file: 'one.yaml' });
    expect(contractTable(one).split('\n')[0]).toBe('contract one.yaml: 1 limit, 1 route, replicas 1');
  });

  it('a contract with long names and keys still fits', () => {
    const long = parseConfig(
      `limits:\n  - { name: ${'a'.repeat(40)}, purpose: abuse, limit: 5, window: 1h, key: header.${'x'.repeat(50)} }\nroutes:\n  - { match: "GET /${'p'.repeat(60)}", limits: [${'a'.repeat(40)}] }\n`,
      { file: 'long.yaml' },
    );
    expect(contractTable(long).split('\n').filter((l) => l.length > BANNER_COLUMNS)).toEqual([]);
  });
});

describe('wrapText and formatTable (property)', () => {
  it('wrapText: every line within the width, the words kept in order', () => {
    fc.assert(
      fc.property(words, fc.integer({ min: 1, max: 40 }), (text, width) => {
        const lines = wrapText(text, width);
        expect(lines.every((l) => l.length <= width)).toBe(true);
        // Words longer than a line are cut, so compare without the spaces.
        expect(lines.join('').replaceAll(' ', '')).toBe(text.replaceAll(' ', ''));
        // A line is broken only where the next word would not fit.
        for (let i = 0; i + 1 < lines.length; i++) {
          const next = (lines[i + 1] as string).split(' ')[0] as string;
          expect((lines[i] as string).length + 1 + next.length > width || next.length === width).toBe(true);
        }
      }),
    );
  });

  it('formatTable: within maxWidth whenever the narrowest layout fits; every cell kept in its column, rows in order', () => {
    const table = fc.integer({ min: 1, max: 6 }).chain((n) =>
      fc.record({
        header: fc.array(fc.stringMatching(/^[a-z]{1,10}$/), { minLength: n, maxLength: n }),
        rows: fc.array(fc.array(words, { minLength: n, maxLength: n }), { maxLength: 8 }),
        maxWidth: fc.integer({ min: 20, max: 160 }),
      }),
    );
    fc.assert(
      fc.property(table, ({ header, rows, maxWidth }) => {
        const lines = formatTable(header, rows, maxWidth);
        // A column narrows to its header or 8 characters, and never below what it holds when that is less.
        const narrowest = header.reduce((a, h, i) => a + Math.max(h.length, Math.min(8, Math.max(0, ...rows.map((r) => (r[i] ?? '').length)))), 0) + 2 * (header.length - 1);
        if (narrowest <= maxWidth) expect(lines.filter((l) => l.length > maxWidth)).toEqual([]);
        expect(lines.length).toBeGreaterThanOrEqual(rows.length + 1);
        // Headers hold no spaces: the header line's words are the columns, where they start.
        const starts = [...(lines[0] as string).matchAll(/\S+/g)].map((m) => m.index);
        expect([...(lines[0] as string).matchAll(/\S+/g)].map((m) => m[0])).toEqual(header);
        header.forEach((_, i) => {
          const pieces = lines.slice(1).map((l) => l.slice(starts[i], starts[i + 1]));
          // Two spaces at least between columns: nothing of column i runs into the next.
          if (i + 1 < header.length) for (const p of pieces) expect(p.endsWith('  ') || p.trim() === '' || p.length < (starts[i + 1] as number) - (starts[i] as number)).toBe(true);
          expect(pieces.join('').replaceAll(' ', '')).toBe(rows.map((r) => (r[i] ?? '').replaceAll(' ', '')).join(''));
        });
      }),
      { numRuns: 300 },
    );
  });
});
