#!/usr/bin/env node
// What one decision costs on the single-limit memory path: 3,000,000 checks on
// one hot key, `await limiter.check(ctx)` and `limiter.checkSync(ctx)`, timed
// in CPU time (this process only), three rounds after a warm-up round.
//
//   node bench/decision-cost.js [DIST_DIR]   (default: ../dist of this checkout)
//
// Pass another checkout's dist/ to compare two builds on the same host.
import { fileURLToPath } from 'node:url';

const dist = process.argv[2] ?? fileURLToPath(new URL('../packages/ratecontract/dist', import.meta.url));
const { createLimiter } = await import(`${dist}/index.js`);
const limiter = createLimiter({ limits: [{ name: 'l', purpose: 'shedding', algorithm: 'gcra', limit: 1_000_000, window: '1h', key: 'ip' }] });
const ctx = { ip: 'k' };
const N = 3_000_000;
const ns = (t) => {
  const u = process.cpuUsage(t);
  return ((u.user + u.system) * 1000) / N;
};
for (let round = 0; round < 4; round++) {
  let t = process.cpuUsage();
  for (let i = 0; i < N; i++) await limiter.check(ctx);
  const awaited = ns(t);
  let sync = NaN;
  if (typeof limiter.checkSync === 'function') {
    t = process.cpuUsage();
    for (let i = 0; i < N; i++) limiter.checkSync(ctx);
    sync = ns(t);
  }
  if (round > 0) console.log(`await check ${awaited.toFixed(1)} ns/decision, checkSync ${sync.toFixed(1)} ns/decision`);
}
