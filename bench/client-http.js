// The second half of the backoff demonstration: clients against a real
// ratecontract limit over HTTP on 127.0.0.1, with and without Retry-After
// honoured. Real time (the limiter runs on the system clock), bounded: each
// variant stops at BENCH_DEADLINE_S (default 30 s) whatever happens.
//
//   npm run build && node bench/client-http.js           (from the repository root)
//
// Server: node:http with ratecontract/node's createGuard, one limit of 50
// requests per second (GCRA, burst 50) on the caller's IP, `advertise:
// 'always'` so RateLimit fields are sent, 429 with Retry-After (whole seconds,
// rounded up) when over. Work: 20 callers in parallel, each needing 10
// successful GETs, one after the other (200 in all: 4 s of quota after the
// burst). Variants:
//
// - ignore Retry-After, retry after 10 ms;
// - ignore Retry-After, full-jitter backoff (base 100 ms, cap 20 s: the
//   client's own defaults, through backoffWait);
// - createFetch with Retry-After honoured, pacing off;
// - createFetch with Retry-After and RateLimit pacing (the default).
//
// (createFetch runs with budget: false and maxAttempts: 1000 here, so that
// every caller finishes and the variants do the same work.) Reports calls
// the server saw, how many it rejected, and the time until the last caller
// finished. Prints a markdown table; writes bench/results/client-http.json.

import { createServer } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createLimiter, memoryStore } from '../packages/ratecontract/dist/index.js';
import { createGuard } from '../packages/ratecontract/dist/adapters/node/index.js';
import { backoffWait, createFetch } from '../packages/ratecontract/dist/client/index.js';

const CALLERS = 20;
const EACH = 10;
const DEADLINE_MS = Number(process.env.BENCH_DEADLINE_S ?? 30) * 1000;

async function startServer() {
  const limiter = createLimiter({
    defaultStore: memoryStore(),
    limits: [{ name: 'per-ip', purpose: 'abuse', algorithm: 'gcra', limit: 50, window: '1s', key: 'ip' }],
  });
  const guard = createGuard(limiter, { advertise: 'always' });
  const counts = { calls: 0, rejected: 0 };
  const server = createServer((req, res) => {
    counts.calls += 1;
    res.on('finish', () => {
      if (res.statusCode === 429) counts.rejected += 1;
    });
    void guard(req, res).then((ok) => {
      if (ok) res.end('ok');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;
  return {
    url,
    counts,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A caller that ignores Retry-After: after a 429 it waits `waitFor(failures)` and tries again. */
function ignoring(waitFor) {
  return async (url, stop) => {
    let failures = 0;
    while (!stop.done) {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status !== 429) return;
      failures += 1;
      await pause(waitFor(failures));
    }
  };
}

function polite(pacing) {
  const f = createFetch({ pacing, budget: false, maxAttempts: 1000, maxWait: Infinity, maxRetryAfter: Infinity });
  return async (url, stop) => {
    const res = await f(url, { signal: stop.signal });
    await res.arrayBuffer();
  };
}

const VARIANTS = [
  { id: 'ignore-10ms', label: 'ignores Retry-After, retries after 10 ms', make: () => ignoring(() => 10) },
  {
    id: 'ignore-full-jitter',
    label: 'ignores Retry-After, full-jitter backoff (100 ms, cap 20 s)',
    make: () => {
      let prev = 100;
      return ignoring((n) => (prev = backoffWait({ base: 100, cap: 20_000, jitter: 'full' }, n - 1, prev, Math.random)));
    },
  },
  { id: 'retry-after', label: 'createFetch: Retry-After honoured, pacing off', make: () => polite('off') },
  { id: 'retry-after+pacing', label: 'createFetch: Retry-After and RateLimit pacing (default)', make: () => polite('burst') },
];

async function run(variant) {
  const server = await startServer();
  // Past the deadline every caller stops: the ignoring ones at their next turn, createFetch's waits at once.
  const controller = new AbortController();
  const stop = { done: false, signal: controller.signal };
  const deadline = setTimeout(() => {
    stop.done = true;
    controller.abort(new Error('deadline'));
  }, DEADLINE_MS);
  const call = variant.make();
  const t0 = performance.now();
  let finished = 0;
  try {
    await Promise.all(
      Array.from({ length: CALLERS }, async () => {
        for (let i = 0; i < EACH && !stop.done; i++) await call(server.url, stop);
        if (!stop.done) finished += 1;
      }),
    );
  } catch {
    // Past the deadline: reported as unfinished.
  }
  const ms = performance.now() - t0;
  clearTimeout(deadline);
  await server.close();
  return { variant: variant.id, label: variant.label, calls: server.counts.calls, rejected: server.counts.rejected, completionMs: Math.round(ms), finished, callers: CALLERS };
}

async function main() {
  const results = [];
  for (const v of VARIANTS) results.push(await run(v));
  const lines = [
    `${CALLERS} callers x ${EACH} successes against 50 req/s (GCRA, burst 50), node:http + createGuard on 127.0.0.1`,
    '',
    '| client | calls | rejected (429) | completion (ms) | callers finished |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...results.map((r) => `| ${r.label} | ${r.calls} | ${r.rejected} | ${r.completionMs} | ${r.finished}/${r.callers} |`),
  ];
  console.log(lines.join('\n'));
  const root = fileURLToPath(new URL('..', import.meta.url));
  mkdirSync(`${root}bench/results`, { recursive: true });
  writeFileSync(`${root}bench/results/client-http.json`, JSON.stringify({ callers: CALLERS, each: EACH, limit: '50/s gcra burst 50', results }, null, 2) + '\n');
}

await main();
