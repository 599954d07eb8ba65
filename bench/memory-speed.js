// Issue 23's memory-store comparison, pinned and interleaved:
//   node memory-speed.js [--rounds 5] [--ids rc-gcra,rlf] [--before DIST_DIR]
// The awaited single-limit check (throughput-child.js: mitata, batches of
// 4,096 awaited calls, CPU-time clock, a fresh process per measurement,
// pinned to CPU 0 with taskset) on 1 hot key and on 100,000 keys
// round-robin, every contender once per round in the same order; ratios of
// ratecontract to rate-limiter-flexible's RateLimiterMemory within each
// round, reported as the median and range. With --before, rc-gcra again on
// another build's dist/ (RATECONTRACT_DIST). Prints markdown, writes
// results/memory-speed-latest.json.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SCENARIOS } from './throughput.js';

const { values: opt } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, ids: { type: 'string', default: 'rc-gcra,rlf' }, before: { type: 'string' }, ms: { type: 'string', default: '400' } } });
const child = fileURLToPath(new URL('./throughput-child.js', import.meta.url));
const rows = opt.ids.split(',').map((id) => [id, id, {}]);
if (opt.before) rows.splice(1, 0, ['rc-gcra-before', 'rc-gcra', { RATECONTRACT_DIST: `${opt.before.replace(/\/$/, '')}/index.js` }]);
const load = () => os.loadavg()[0].toFixed(2);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const loadStart = os.loadavg().map((x) => x.toFixed(2));
const per = {};
for (const sc of SCENARIOS) {
  per[sc.id] = Object.fromEntries(rows.map(([r]) => [r, []]));
  for (let r = 0; r < Number(opt.rounds); r++) {
    for (const [row, id, env] of rows) {
      const x = spawnSync('taskset', ['-c', '0', process.execPath, '--expose-gc', child, id, String(sc.keys), opt.ms, 'cpu'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
      if (x.status !== 0) throw new Error(`${id} failed: ${x.stderr}`);
      const res = JSON.parse(x.stdout.trim().split('\n').pop());
      res.load = load();
      per[sc.id][row].push(res);
      process.stderr.write(`  ${sc.id} round ${r + 1} ${row.padEnd(16)} ${res.avgNs.toFixed(1)} ns/decision rejected=${res.rejected} load ${res.load}\n`);
    }
  }
}
const out = { date: new Date().toISOString(), loadStart, loadEnd: os.loadavg().map((x) => x.toFixed(2)), scenarios: {} };
console.log(`${out.date}; node ${process.version}; pinned to CPU 0; ${opt.rounds} interleaved rounds; load average ${loadStart.join(' ')} at start, ${out.loadEnd.join(' ')} at end`);
console.log();
console.log('| scenario | contender | ns/decision, median (rounds) | decisions/s | vs rate-limiter-flexible, median (range over rounds) | rejected |');
console.log('| --- | --- | ---: | ---: | ---: | ---: |');
for (const sc of SCENARIOS) {
  const p = per[sc.id];
  out.scenarios[sc.id] = {};
  for (const [row] of rows) {
    const ns = p[row].map((x) => x.avgNs);
    const ratios = p.rlf ? p[row].map((x, r) => p.rlf[r].avgNs / x.avgNs) : [];
    out.scenarios[sc.id][row] = { ns, ratios, loads: p[row].map((x) => x.load), rejected: p[row].reduce((a, x) => a + x.rejected, 0) };
    const rs = ratios.length ? `${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)})` : '';
    console.log(`| ${sc.label} | ${row} | ${median(ns).toFixed(1)} (${ns.map((x) => x.toFixed(0)).join(', ')}) | ${Math.round(1e9 / median(ns)).toLocaleString('en-US')} | ${rs} | ${out.scenarios[sc.id][row].rejected} |`);
  }
}
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/memory-speed-latest.json', import.meta.url), JSON.stringify({ ...out, raw: per }, null, 2) + '\n');
