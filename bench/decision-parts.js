#!/usr/bin/env node
// What each part of an awaited single-limit memory decision costs (issue 23):
// the same awaited loop built up one part at a time, each line adding one
// part to the one before, so the difference between two lines is that
// part's cost. On 1 hot key and on 100,000 keys round-robin; CPU time of
// this process (run it pinned: taskset -c 0), median of 5 rounds after a
// warm-up, N awaited calls per round.
//
//   taskset -c 0 node --expose-gc bench/decision-parts.js [DIST_DIR]
//
// Parts, as the limiter's single-limit fast path runs them:
//   loop      an awaited async function returning a constant (the harness)
//   key       + the limit's key extractor (ctx.ip) and the clock read (Date.now)
//   store     + the memory store's Map lookup of the key's state
//   algorithm + the GCRA decision on that state (Algorithm.decideInto, in place)
//   decision  the whole `await limiter.check(ctx)`: the above plus the
//             LimitResult and Decision objects and the promise (no listener)
//   events    + a subscriber on ratecontract:decision (the event published)
//   checkSync limiter.checkSync(ctx), not awaited (for reference)
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { fileURLToPath } from 'node:url';

const dist = process.argv[2] ?? fileURLToPath(new URL('../packages/ratecontract/dist', import.meta.url));
const { createLimiter, algorithms, CHANNELS } = await import(`${dist}/index.js`);
const N = 2_000_000;
const def = { name: 'l', purpose: 'shedding', algorithm: 'gcra', limit: 10, burst: 1e8, window: '1h', key: 'ip' };

function build(nkeys) {
  const keys = Array.from({ length: nkeys }, (_, i) => `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`);
  const ctxs = keys.map((ip) => ({ ip }));
  const limiter = createLimiter({ limits: [def] });
  const params = limiter.limits[0].params;
  const gcra = algorithms.gcra;
  const out = { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 };
  const map = new Map();
  const now0 = Date.now();
  for (const k of keys) map.set(k, gcra.decide(undefined, now0, 1, params).state);
  const keyOf = (ctx) => ctx.ip;
  let sink = 0;
  const parts = {
    loop: async () => 1,
    key: async (ctx) => {
      const k = keyOf(ctx);
      sink += Date.now() & 1;
      return k;
    },
    store: async (ctx) => {
      const k = keyOf(ctx);
      const now = Date.now();
      return map.get(k) !== undefined && now > 0;
    },
    algorithm: async (ctx) => {
      const k = keyOf(ctx);
      const now = Date.now();
      const st = map.get(k);
      gcra.decideInto(st, now, 1, params, out, st, '');
      return out.allowed;
    },
    decision: async (ctx) => (await limiter.check(ctx)).allowed,
  };
  return { ctxs, limiter, parts, sink: () => sink };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
};
async function time(f, ctxs) {
  const n = ctxs.length;
  const t = process.cpuUsage();
  for (let i = 0, j = 0; i < N; i++) {
    await f(ctxs[j]);
    j = j + 1 === n ? 0 : j + 1;
  }
  const u = process.cpuUsage(t);
  return ((u.user + u.system) * 1000) / N;
}
function timeSync(limiter, ctxs) {
  const n = ctxs.length;
  const t = process.cpuUsage();
  for (let i = 0, j = 0; i < N; i++) {
    limiter.checkSync(ctxs[j]);
    j = j + 1 === n ? 0 : j + 1;
  }
  const u = process.cpuUsage(t);
  return ((u.user + u.system) * 1000) / N;
}

const rows = [];
for (const nkeys of [1, 100_000]) {
  const { ctxs, limiter, parts } = build(nkeys);
  const res = { loop: [], key: [], store: [], algorithm: [], decision: [], events: [], checkSync: [] };
  const listener = () => undefined;
  for (let round = 0; round < 6; round++) {
    for (const [name, f] of Object.entries(parts)) {
      const ns = await time(f, ctxs);
      if (round > 0) res[name].push(ns);
    }
    subscribe(CHANNELS.decision, listener);
    const ev = await time(parts.decision, ctxs);
    unsubscribe(CHANNELS.decision, listener);
    const sy = timeSync(limiter, ctxs);
    if (round > 0) {
      res.events.push(ev);
      res.checkSync.push(sy);
    }
    globalThis.gc?.();
  }
  rows.push([nkeys, Object.fromEntries(Object.entries(res).map(([k, v]) => [k, median(v)]))]);
}
console.log('| part (cumulative) | 1 hot key, ns | added, ns | 100,000 keys, ns | added, ns |');
console.log('| --- | ---: | ---: | ---: | ---: |');
const names = ['loop', 'key', 'store', 'algorithm', 'decision', 'events', 'checkSync'];
for (let i = 0; i < names.length; i++) {
  const n = names[i];
  const [a, b] = rows.map(([, r]) => r);
  const prev = i === 0 || n === 'checkSync' ? undefined : names[i - 1];
  const add = (r) => (prev === undefined ? '' : (r[n] - r[prev]).toFixed(1));
  console.log(`| ${n} | ${a[n].toFixed(1)} | ${add(a)} | ${b[n].toFixed(1)} | ${add(b)} |`);
}
