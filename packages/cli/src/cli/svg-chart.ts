import { formatDuration } from 'ratecontract';
import type { SimulationResult } from './simulate.js';

/**
 * A self-contained SVG of a simulation: one chart per algorithm, stacked, on
 * one shared y scale so that the charts compare at a glance. Each chart draws
 * the most admitted in a trailing window (concurrency: in flight) per column
 * as a step line, and the algorithm's bound as a dashed line. No scripts, no
 * external fonts or images: it renders the same in a browser, on GitHub and
 * in an image viewer.
 *
 * Elements carry classes for tools and tests: `g.chart[data-algorithm]`,
 * `polyline.series`, `line.bound[data-bound]`, `line.grid[data-value]`.
 */
export interface ChartInput {
  /** First line of the heading. */
  readonly title: string;
  /** Second line: the parameters of the run. */
  readonly subtitle: string;
  readonly windowMs: number;
  /** The label under each x axis. */
  readonly xLabel: string;
  readonly results: readonly SimulationResult[];
}

const WIDTH = 820;
const LEFT = 78;
const RIGHT = 28;
const HEADER = 96;
const BLOCK = 196;
const PLOT_TOP = 30;
const PLOT_HEIGHT = 116;
const FONT = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif";
const SERIES_COLOUR = '#0969da';
const BOUND_COLOUR = '#cf222e';

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** A coordinate with one decimal. */
function n(v: number): string {
  return String(Math.round(v * 10) / 10);
}

/** The smallest 1, 2 or 5 times a power of ten that is at least `raw`. */
function niceStep(raw: number): number {
  if (!(raw > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

/** A time-axis label in the unit of the tick step: `2.5s`, `90s`, `1.5m`. */
function tickLabel(t: number, step: number): string {
  if (t === 0) return '0';
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (step >= size) return `${Math.round((t / size) * 100) / 100}${unit}`;
  }
  return `${t}ms`;
}

/** Renders the chart. */
export function renderSvg(input: ChartInput): string {
  const { results, windowMs } = input;
  const first = results[0];
  const width = first?.bucketMs ?? 1;
  const horizon = (first?.timeline.length ?? 1) * width;
  const top = Math.max(1, ...results.map((r) => Math.max(r.bound, r.maxInWindow)));
  const yStep = niceStep((top * 1.08) / 5);
  const yMax = Math.ceil((top * 1.08) / yStep) * yStep;
  const plotWidth = WIDTH - LEFT - RIGHT;
  const height = HEADER + results.length * BLOCK + 8;
  const xOf = (t: number): number => LEFT + (t / horizon) * plotWidth;
  const windowsStep = niceStep(horizon / windowMs / 11);
  const xStep = Math.max(1, windowsStep) * windowMs;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-labelledby="chart-title chart-desc" font-family="${esc(FONT)}">`,
  );
  out.push(`<title id="chart-title">${esc(input.title)}</title>`);
  out.push(`<desc id="chart-desc">${esc(input.subtitle)}</desc>`);
  out.push(`<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text x="${LEFT}" y="28" font-size="18" font-weight="600" fill="#1f2328">${esc(input.title)}</text>`);
  out.push(`<text x="${LEFT}" y="50" font-size="13" fill="#57606a">${esc(input.subtitle)}</text>`);
  // Legend.
  out.push(`<g class="legend" font-size="12" fill="#1f2328">`);
  out.push(`<line x1="${LEFT}" y1="72" x2="${LEFT + 28}" y2="72" stroke="${SERIES_COLOUR}" stroke-width="2"/>`);
  out.push(`<text x="${LEFT + 34}" y="76">most admitted in any trailing ${esc(formatDuration(windowMs))} (concurrency: in flight), per ${esc(formatDuration(width))} column</text>`);
  out.push(`<line x1="${LEFT}" y1="88" x2="${LEFT + 28}" y2="88" stroke="${BOUND_COLOUR}" stroke-width="2" stroke-dasharray="6 4"/>`);
  out.push(`<text x="${LEFT + 34}" y="92">theoretical bound: the most the algorithm can ever admit in one window length</text>`);
  out.push(`</g>`);

  results.forEach((r, index) => {
    const y0 = HEADER + index * BLOCK;
    const plotTop = y0 + PLOT_TOP;
    const plotBottom = plotTop + PLOT_HEIGHT;
    const yOf = (v: number): number => plotBottom - (v / yMax) * PLOT_HEIGHT;
    out.push(`<g class="chart" data-algorithm="${esc(r.algorithm)}">`);
    out.push(
      `<text class="chart-title" x="${LEFT}" y="${y0 + 18}" font-size="14" font-weight="600" fill="#1f2328">${esc(r.algorithm)}` +
        `<tspan dx="8" font-size="12" font-weight="400" fill="#57606a">bound ${r.bound}: ${esc(r.boundRule)}</tspan></text>`,
    );
    out.push(
      `<text class="chart-note" x="${LEFT + plotWidth}" y="${y0 + 18}" font-size="12" text-anchor="end" fill="#57606a">max ${r.maxInWindow}, admitted ${r.admitted} of ${r.offered}</text>`,
    );
    // Grid and y ticks.
    for (let v = 0; v <= yMax; v += yStep) {
      const y = n(yOf(v));
      out.push(`<line class="grid" data-value="${v}" x1="${LEFT}" y1="${y}" x2="${LEFT + plotWidth}" y2="${y}" stroke="#d0d7de" stroke-width="1"/>`);
      out.push(`<text class="y-tick" x="${LEFT - 6}" y="${n(yOf(v) + 4)}" font-size="11" text-anchor="end" fill="#57606a">${v}</text>`);
    }
    const yLabel = r.algorithm === 'concurrency' ? 'in flight' : `in trailing ${formatDuration(windowMs)}`;
    const mid = (plotTop + plotBottom) / 2;
    out.push(`<text class="y-label" x="${LEFT - 44}" y="${n(mid)}" font-size="11" text-anchor="middle" fill="#57606a" transform="rotate(-90 ${LEFT - 44} ${n(mid)})">${esc(yLabel)}</text>`);
    // X ticks.
    for (let t = 0; t <= horizon; t += xStep) {
      const x = n(xOf(t));
      out.push(`<line x1="${x}" y1="${plotBottom}" x2="${x}" y2="${plotBottom + 4}" stroke="#57606a" stroke-width="1"/>`);
      out.push(`<text class="x-tick" x="${x}" y="${plotBottom + 16}" font-size="11" text-anchor="middle" fill="#57606a">${esc(tickLabel(t, xStep))}</text>`);
    }
    out.push(`<line x1="${LEFT}" y1="${plotBottom}" x2="${LEFT + plotWidth}" y2="${plotBottom}" stroke="#57606a" stroke-width="1"/>`);
    out.push(`<line x1="${LEFT}" y1="${plotTop}" x2="${LEFT}" y2="${plotBottom}" stroke="#57606a" stroke-width="1"/>`);
    out.push(`<text class="x-label" x="${n(LEFT + plotWidth / 2)}" y="${plotBottom + 33}" font-size="11" text-anchor="middle" fill="#57606a">${esc(input.xLabel)}</text>`);
    // The series, as steps: column i holds its value over [i * width, (i + 1) * width).
    const points: string[] = [];
    r.peakInWindow.forEach((v, i) => {
      const y = n(yOf(v));
      points.push(`${n(xOf(i * width))},${y}`, `${n(xOf((i + 1) * width))},${y}`);
    });
    out.push(`<polyline class="series" data-algorithm="${esc(r.algorithm)}" points="${points.join(' ')}" fill="none" stroke="${SERIES_COLOUR}" stroke-width="1.6" stroke-linejoin="round"/>`);
    // The bound.
    const yb = n(yOf(r.bound));
    out.push(
      `<line class="bound" data-bound="${r.bound}" x1="${LEFT}" y1="${yb}" x2="${LEFT + plotWidth}" y2="${yb}" stroke="${BOUND_COLOUR}" stroke-width="1.6" stroke-dasharray="6 4"/>`,
    );
    out.push(`<text class="bound-label" x="${LEFT + plotWidth - 4}" y="${n(yOf(r.bound) - 5)}" font-size="11" text-anchor="end" fill="${BOUND_COLOUR}">bound ${r.bound}</text>`);
    out.push(`</g>`);
  });
  out.push(`</svg>`);
  return out.join('\n') + '\n';
}
