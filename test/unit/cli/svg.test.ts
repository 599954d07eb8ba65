import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOMParser, type Element } from '@xmldom/xmldom';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers.js';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ratecontract-svg-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface JsonAlgorithm {
  algorithm: string;
  maxInWindow: number;
  bound: number;
  series: { peakInWindow: number[] };
}

/** Parses with a real XML parser that fails on any well-formedness error or warning. */
function parseSvg(text: string): Element {
  const doc = new DOMParser({
    onError: (level, message) => {
      throw new Error(`SVG is not well-formed XML (${level}): ${message}`);
    },
  }).parseFromString(text, 'image/svg+xml');
  const root = doc.documentElement;
  if (root === null) throw new Error('no root element');
  return root;
}

function all(el: Element, tag: string, cls?: string): Element[] {
  return Array.from(el.getElementsByTagName(tag)).filter((e) => cls === undefined || (e.getAttribute('class') ?? '').split(' ').includes(cls));
}

function num(el: Element, attr: string): number {
  const v = el.getAttribute(attr);
  if (v === null || v === '' || !Number.isFinite(Number(v))) throw new Error(`<${el.tagName}> has no numeric ${attr}: ${String(v)}`);
  return Number(v);
}

/** Table rows of the terminal output: algorithm -> [max in any window, bound]. */
function tableRows(stdout: string): Map<string, [number, number]> {
  const rows = new Map<string, [number, number]>();
  for (const line of stdout.split('\n')) {
    const m = /^([a-z-]+)\s+\d+\s+\d+\s+\d+\s+(\d+)(?: in flight)?\s+(\d+)\s/.exec(line);
    if (m !== null) rows.set(m[1] as string, [Number(m[2]), Number(m[3])]);
  }
  return rows;
}

describe('docs/simulate-boundary.svg', () => {
  it('is what the command in docs/algorithms.md generates today', async () => {
    const file = join(dir, 'docs-check.svg');
    const r = await runCli(['simulate', '--svg', file]);
    expect(r.code, r.stderr).toBe(0);
    const docs = fileURLToPath(new URL('../../../docs/simulate-boundary.svg', import.meta.url));
    const page = await readFile(fileURLToPath(new URL('../../../docs/algorithms.md', import.meta.url)), 'utf8');
    expect(page).toContain('npx ratecontract simulate --svg docs/simulate-boundary.svg');
    expect(page).toContain('](simulate-boundary.svg)');
    expect(await readFile(file, 'utf8'), 'regenerate with: npm run simulate -- --svg docs/simulate-boundary.svg').toBe(await readFile(docs, 'utf8'));
  });
});

describe.each([
  ['defaults (boundary burst, every algorithm)', []],
  ['poisson, a burst, three algorithms', ['--pattern', 'poisson', '--seed', '3', '--limit', '12', '--window', '2s', '--burst', '20', '--windows', '30', '--algorithms', 'gcra,fixed-window,concurrency']],
  ['bursty on a short window', ['--pattern', 'bursty', '--limit', '7', '--window', '50ms', '--windows', '400']],
])('the --svg chart, %s', (_label, args) => {
  it('has one chart with exactly one series per algorithm, and a bound line that matches the table and the JSON', async () => {
    const svgFile = join(dir, `chart-${args.length}.svg`);
    const table = await runCli(['simulate', ...args, '--svg', svgFile]);
    expect(table.code, table.stderr).toBe(0);
    const jsonRun = await runCli(['simulate', ...args, '--json']);
    expect(jsonRun.code, jsonRun.stderr).toBe(0);
    const algorithms = (JSON.parse(jsonRun.stdout) as { algorithms: JsonAlgorithm[] }).algorithms;
    const rows = tableRows(table.stdout);
    expect([...rows.keys()]).toEqual(algorithms.map((a) => a.algorithm));

    const text = await readFile(svgFile, 'utf8');
    const svg = parseSvg(text);
    expect(svg.tagName).toBe('svg');
    expect(svg.getAttribute('xmlns')).toBe('http://www.w3.org/2000/svg');
    expect(svg.getAttribute('viewBox')).toMatch(/^0 0 \d+ \d+$/);
    // Self-contained: nothing loaded from elsewhere, nothing run.
    for (const tag of ['script', 'image', 'foreignObject', 'style', 'use']) expect(all(svg, tag), tag).toEqual([]);
    expect(text).not.toMatch(/href=|url\(|@import/);
    // xmldom lets a bare & through; a strict reader would not.
    expect(text).not.toMatch(/&(?!(?:amp|lt|gt|quot|apos|#\d+);)/);
    // Readable: a title, a legend, axis labels and tick labels on every chart.
    expect(all(svg, 'title')[0]?.textContent).toMatch(/^ratecontract simulate: /);
    expect(all(svg, 'g', 'legend')).toHaveLength(1);

    const charts = all(svg, 'g', 'chart');
    expect(charts.map((c) => c.getAttribute('data-algorithm'))).toEqual(algorithms.map((a) => a.algorithm));
    for (const [i, chart] of charts.entries()) {
      const expected = algorithms[i] as JsonAlgorithm;
      const name = expected.algorithm;
      const series = all(chart, 'polyline', 'series');
      expect(series, name).toHaveLength(1);
      expect(all(chart, 'polyline'), name).toHaveLength(1);
      expect(all(chart, 'text', 'chart-title')[0]?.textContent).toContain(name);
      expect(all(chart, 'text', 'x-label')).toHaveLength(1);
      expect(all(chart, 'text', 'y-label')).toHaveLength(1);
      expect(all(chart, 'text', 'x-tick').length).toBeGreaterThanOrEqual(2);

      // The chart's y scale, from its own grid lines (value -> pixel).
      const grid = all(chart, 'line', 'grid').map((g) => [num(g, 'data-value'), num(g, 'y1')] as const);
      expect(grid.length).toBeGreaterThanOrEqual(3);
      const [v0, y0] = grid[0] as readonly [number, number];
      const [v1, y1] = grid[grid.length - 1] as readonly [number, number];
      const valueAt = (y: number): number => v0 + ((y - y0) * (v1 - v0)) / (y1 - y0);

      const bounds = all(chart, 'line', 'bound');
      expect(bounds, name).toHaveLength(1);
      const bound = bounds[0] as Element;
      expect(num(bound, 'y1')).toBe(num(bound, 'y2'));
      expect(num(bound, 'data-bound')).toBe(expected.bound);
      expect(rows.get(name)?.[1]).toBe(expected.bound);
      expect(Math.abs(valueAt(num(bound, 'y1')) - expected.bound)).toBeLessThan(0.5);
      expect(all(chart, 'text', 'bound-label')[0]?.textContent).toBe(`bound ${expected.bound}`);

      // The series is the JSON's peakInWindow drawn as steps: two points a column, its top at maxInWindow.
      const points = (series[0]?.getAttribute('points') ?? '').trim().split(/\s+/).map((p) => p.split(',').map(Number) as [number, number]);
      expect(points).toHaveLength(2 * expected.series.peakInWindow.length);
      const values = points.filter((_, k) => k % 2 === 0).map(([, y]) => valueAt(y));
      values.forEach((v, k) => expect(Math.abs(v - (expected.series.peakInWindow[k] ?? NaN))).toBeLessThan(0.5));
      expect(Math.abs(Math.max(...values) - expected.maxInWindow)).toBeLessThan(0.5);
      expect(rows.get(name)?.[0]).toBe(expected.maxInWindow);
      // Every point inside the plot, left to right.
      for (let k = 1; k < points.length; k++) expect((points[k] as [number, number])[0]).toBeGreaterThanOrEqual((points[k - 1] as [number, number])[0]);
    }
  });
});
