// Brooker's backoff demonstration ("Exponential Backoff And Jitter", AWS
// Architecture Blog, 2015), reproduced as a discrete-event simulation in
// virtual time: deterministic (seeded), and a whole sweep takes seconds.
//
//   npm run build && node bench/client-backoff.js            (from the repository root)
//   BENCH_RUNS=20 node bench/client-backoff.js               (fewer runs per point)
//
// Model, as in the original simulator: one row under optimistic concurrency
// on a server. Every client starts at t = 0, reads the row's version, then
// sends a conditional write with that version. The write succeeds only if the
// version is unchanged (and bumps it). A client whose write fails backs off
// and starts again with a read; each client must succeed once, then stops.
// Every message (read, its reply, write, its reply) is delayed by
// |N(10 ms, 2 ms)|; the server takes no time. "Calls" counts write attempts
// at the server; "completion" is when the last client learns it succeeded.
//
// Backoff is ratecontract's own code (dist/client backoffWait), with
// Brooker's parameters: base 5 ms, cap 2 s, and the n-th retry (n = 1, 2, ...)
// under the ceiling min(cap, base * 2^n). Strategies: no backoff, exponential
// without jitter, equal, full, decorrelated jitter.
//
// Writes bench/results/client-backoff.json and docs/client-backoff.svg
// (hand-written SVG, no dependency); prints a markdown table.

import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { backoffWait } from '../packages/ratecontract/dist/client/index.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 50);
const CLIENTS = Array.from({ length: 20 }, (_, i) => (i + 1) * 10); // 10 .. 200
const BASE = 5;
const CAP = 2000;
const STRATEGIES = [
  { id: 'none', label: 'No backoff' },
  { id: 'expo', label: 'Exponential, no jitter', jitter: 'none' },
  { id: 'equal', label: 'Equal jitter', jitter: 'equal' },
  { id: 'full', label: 'Full jitter', jitter: 'full' },
  { id: 'decorrelated', label: 'Decorrelated jitter', jitter: 'decorrelated' },
];

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** |N(mean, sd)| by Box-Muller. */
function delay(random, mean = 10, sd = 2) {
  const u = 1 - random();
  const v = random();
  return Math.abs(mean + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v));
}

/** A binary min-heap of events ordered by time, then by insertion. */
class Events {
  #h = [];
  #seq = 0;
  get size() {
    return this.#h.length;
  }
  push(at, fn) {
    const h = this.#h;
    h.push({ at, seq: this.#seq++, fn });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (less(h[p], h[i])) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
  }
  pop() {
    const h = this.#h;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && less(h[l], h[m])) m = l;
        if (r < h.length && less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return top;
  }
}
const less = (a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/** One run: `clients` contend until each has written once. Returns { calls, completion }. */
export function simulate(clients, strategy, seed) {
  const random = prng(seed);
  const events = new Events();
  const b = { base: BASE, cap: CAP, jitter: strategy.jitter ?? 'none' };
  let version = 0;
  let calls = 0;
  let completion = 0;
  const start = (now, c) => {
    // read: request to the server, reply with the version it saw
    events.push(now + delay(random), (t) => {
      const seen = version;
      events.push(t + delay(random), (t2) => {
        // conditional write
        events.push(t2 + delay(random), (t3) => {
          calls += 1;
          const ok = version === seen;
          if (ok) version += 1;
          events.push(t3 + delay(random), (t4) => {
            if (ok) {
              completion = Math.max(completion, t4);
              return;
            }
            c.failures += 1;
            let wait = 0;
            if (strategy.id !== 'none') {
              wait = backoffWait(b, c.failures, c.previous, random);
              c.previous = wait;
            }
            start(t4 + wait, c);
          });
        });
      });
    });
  };
  for (let i = 0; i < clients; i++) start(0, { failures: 0, previous: BASE });
  while (events.size > 0) {
    const e = events.pop();
    e.fn(e.at);
  }
  return { calls, completion };
}

function main() {
  const results = [];
  const t0 = process.hrtime.bigint();
  for (const s of STRATEGIES) {
    for (const n of CLIENTS) {
      let calls = 0;
      let completion = 0;
      for (let r = 0; r < RUNS; r++) {
        const out = simulate(n, s, 1_000_003 * n + 7919 * r + s.id.length);
        calls += out.calls;
        completion += out.completion;
      }
      results.push({ strategy: s.id, clients: n, calls: calls / RUNS, completionMs: completion / RUNS });
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const at = (id, n) => results.find((r) => r.strategy === id && r.clients === n);

  const lines = [];
  lines.push(`Brooker's OCC contention, mean of ${RUNS} seeded runs per point (${seconds.toFixed(1)} s of CPU for the sweep)`);
  lines.push('');
  lines.push('| strategy | calls @100 | calls @200 | completion @100 (ms) | completion @200 (ms) |');
  lines.push('| --- | ---: | ---: | ---: | ---: |');
  for (const s of STRATEGIES) {
    const a = at(s.id, 100);
    const b = at(s.id, 200);
    lines.push(`| ${s.label} | ${Math.round(a.calls)} | ${Math.round(b.calls)} | ${Math.round(a.completionMs)} | ${Math.round(b.completionMs)} |`);
  }
  const e200 = at('expo', 200);
  const f200 = at('full', 200);
  lines.push('');
  lines.push(`At 200 clients: exponential without jitter makes ${(e200.calls / f200.calls).toFixed(2)}x the calls of full jitter (published shape: about 2.7x),`);
  lines.push(`and full jitter finishes ${(e200.completionMs / f200.completionMs).toFixed(1)}x sooner (published shape: more than 10x).`);
  console.log(lines.join('\n'));

  const root = fileURLToPath(new URL('..', import.meta.url));
  mkdirSync(`${root}bench/results`, { recursive: true });
  writeFileSync(`${root}bench/results/client-backoff.json`, JSON.stringify({ runs: RUNS, base: BASE, cap: CAP, network: '|N(10ms, 2ms)|', results }, null, 2) + '\n');
  writeFileSync(`${root}docs/client-backoff.svg`, chart(results));
}

const COLORS = { none: '#7f7f7f', expo: '#d62728', equal: '#ff7f0e', full: '#2ca02c', decorrelated: '#1f77b4' };

/** Two panels side by side: calls (linear), completion time (log scale). */
function chart(results) {
  const W = 960;
  const H = 420;
  const pad = { l: 70, r: 20, t: 40, b: 90 };
  const pw = (W - pad.l * 2 - pad.r * 2) / 2;
  const ph = H - pad.t - pad.b;
  const x = (n, ox) => ox + ((n - 10) / 190) * pw;
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  const panels = [
    { title: 'Total calls (write attempts)', key: 'calls', log: false },
    { title: 'Time to completion (ms, log scale)', key: 'completionMs', log: true },
  ];
  panels.forEach((p, i) => {
    const ox = pad.l + i * (pw + pad.l + pad.r);
    const values = results.map((r) => r[p.key]);
    const max = Math.max(...values);
    const min = p.log ? Math.min(...values) : 0;
    const lo = p.log ? Math.floor(Math.log10(min)) : 0;
    const hi = p.log ? Math.ceil(Math.log10(max)) : niceCeil(max);
    const y = (v) => pad.t + ph - (p.log ? (Math.log10(v) - lo) / (hi - lo) : v / hi) * ph;
    out.push(`<text x="${ox + pw / 2}" y="${pad.t - 16}" text-anchor="middle" font-weight="bold">${p.title}</text>`);
    out.push(`<line x1="${ox}" y1="${pad.t + ph}" x2="${ox + pw}" y2="${pad.t + ph}" stroke="black"/>`);
    out.push(`<line x1="${ox}" y1="${pad.t}" x2="${ox}" y2="${pad.t + ph}" stroke="black"/>`);
    const ticks = p.log ? Array.from({ length: hi - lo + 1 }, (_, k) => 10 ** (lo + k)) : Array.from({ length: 6 }, (_, k) => (hi * k) / 5);
    for (const v of ticks) {
      out.push(`<line x1="${ox}" y1="${y(v)}" x2="${ox + pw}" y2="${y(v)}" stroke="#e0e0e0"/>`);
      out.push(`<text x="${ox - 6}" y="${y(v) + 4}" text-anchor="end">${Math.round(v).toLocaleString('en-US')}</text>`);
    }
    for (const n of [10, 50, 100, 150, 200]) out.push(`<text x="${x(n, ox)}" y="${pad.t + ph + 16}" text-anchor="middle">${n}</text>`);
    out.push(`<text x="${ox + pw / 2}" y="${pad.t + ph + 34}" text-anchor="middle">clients</text>`);
    for (const s of STRATEGIES) {
      const pts = results
        .filter((r) => r.strategy === s.id)
        .map((r) => `${x(r.clients, ox).toFixed(1)},${y(r[p.key]).toFixed(1)}`)
        .join(' ');
      out.push(`<polyline points="${pts}" fill="none" stroke="${COLORS[s.id]}" stroke-width="2"/>`);
    }
  });
  STRATEGIES.forEach((s, k) => {
    const lx = pad.l + k * 175;
    const ly = H - 22;
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${COLORS[s.id]}" stroke-width="3"/>`);
    out.push(`<text x="${lx + 30}" y="${ly + 4}">${s.label}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
