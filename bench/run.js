// One run, side by side: `node --expose-gc run.js [throughput|heap|all]`
// (npm run bench:memory = all). Prints markdown tables of ratios and raw
// numbers, and writes results/latest.json. Reports; never asserts.

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { runHeap } from './heap.js';
import { runThroughput, SCENARIOS } from './throughput.js';

const what = process.argv[2] ?? 'all';
const clock = process.env.BENCH_CLOCK ?? 'cpu';
if (!['all', 'throughput', 'heap'].includes(what)) {
  console.error('usage: node --expose-gc run.js [all|throughput|heap]');
  process.exit(2);
}
if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc');
  process.exit(2);
}

const log = (s) => process.stderr.write(s + '\n');
const machine = {
  node: process.version,
  v8: process.versions.v8,
  cpu: os.cpus()[0]?.model ?? 'unknown',
  cores: os.cpus().length,
  memGiB: Math.round(os.totalmem() / 2 ** 30),
  platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  date: new Date().toISOString(),
  loadavgStart: os.loadavg().map((x) => Number(x.toFixed(2))),
};
function revision() {
  try {
    const git = (...args) => execFileSync('git', ['-C', new URL('..', import.meta.url).pathname, ...args], { encoding: 'utf8' }).trim();
    const dirty = git('status', '--porcelain', '--', 'src').length > 0;
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' + uncommitted changes in src/' : ''}`;
  } catch {
    return 'unknown';
  }
}
machine.ratecontract = revision();

const RC = ['rc-gcra', 'rc-token-bucket', 'rc-fixed-window', 'rc-sliding-window'];
const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
const int = (x) => Math.round(x).toLocaleString('en-US');

const results = { machine };
const t0 = performance.now();
const lines = [];
const print = (s = '') => {
  lines.push(s);
  console.log(s);
};

print(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, ${machine.platform}; Node ${machine.node} (V8 ${machine.v8})`);
print(`ratecontract: ${machine.ratecontract} (dist/ rebuilt from src/ by the npm script)`);
print(`load average at start: ${machine.loadavgStart.join(' ')}`);

if (what === 'all' || what === 'throughput') {
  log('throughput (awaited decisions, mitata)...');
  const tp = await runThroughput({ clock, log });
  results.throughput = tp;
  for (const s of SCENARIOS) {
    const r = tp[s.id];
    print();
    print(`### Throughput, ${s.label} (median of ${Object.values(r)[0].roundsNs.length} rounds, ${clock === 'cpu' ? 'CPU-time' : 'wall'} clock)`);
    print();
    print('| contender | decisions/s | ns/decision | vs rate-limiter-flexible | vs awaited Map counter | best round ns | rejected |');
    print('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const [id, x] of Object.entries(r)) {
      print(`| ${x.label} | ${int(x.opsPerSec)} | ${fmt(x.avgNs, 1)} | ${fmt(x.opsPerSec / r.rlf.opsPerSec)}x | ${fmt(x.opsPerSec / r['map-counter'].opsPerSec)}x | ${fmt(x.bestNs, 1)} | ${x.rejected} |`);
    }
  }
}

if (what === 'all' || what === 'heap') {
  log('heap bytes per key (fresh child per contender, 1,000,000 keys)...');
  const hp = runHeap({ log });
  results.heap = hp;
  print();
  print('### Heap bytes per key, 1,000,000 keys (heapUsed after gc, fresh process each)');
  print();
  print('| contender | heap bytes/key | vs rate-limiter-flexible | vs plain Map<string, object> | off-heap bytes/key | keys held | timers started per key | rejected |');
  print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [id, x] of Object.entries(hp)) {
    print(`| ${x.label} | ${fmt(x.bytesPerKey, 1)} | ${fmt(x.bytesPerKey / hp.rlf.bytesPerKey)}x | ${fmt(x.bytesPerKey / hp['plain-map'].bytesPerKey)}x | ${fmt(x.arrayBufferBytesPerKey, 1)} | ${int(x.storedKeys)} | ${fmt(x.timersPerKey, 2)} | ${x.rejected} |`);
  }
}

// Targets from issue 2, as ratios from this run.
print();
print('### Targets (issue 2)');
print();
print('| target | ratecontract algorithm | value (median rounds) | met | value (best rounds) |');
print('| --- | --- | ---: | --- | ---: |');
const targets = [];
if (results.throughput) {
  for (const s of SCENARIOS) {
    const r = results.throughput[s.id];
    for (const id of RC) {
      const vsRlf = r[id].opsPerSec / r.rlf.opsPerSec;
      const vsMap = r[id].opsPerSec / r['map-counter'].opsPerSec;
      const bestVsRlf = r.rlf.bestNs / r[id].bestNs;
      const bestVsMap = r['map-counter'].bestNs / r[id].bestNs;
      targets.push({ target: `>= 2x rate-limiter-flexible decisions/s, ${s.label}`, id, value: vsRlf, met: vsRlf >= 2, best: bestVsRlf });
      targets.push({ target: `>= 0.5x awaited Map counter, ${s.label}`, id, value: vsMap, met: vsMap >= 0.5, best: bestVsMap });
    }
  }
}
if (results.heap) {
  const h = results.heap;
  for (const id of RC) {
    const vsRlf = h[id].bytesPerKey / h.rlf.bytesPerKey;
    const vsMap = h[id].bytesPerKey / h['plain-map'].bytesPerKey;
    targets.push({ target: '<= 1/3 of rate-limiter-flexible heap bytes/key', id, value: vsRlf, met: vsRlf <= 1 / 3 });
    targets.push({ target: '(aim) below plain Map<string, object> heap bytes/key', id, value: vsMap, met: vsMap < 1 });
  }
}
for (const t of targets) print(`| ${t.target} | ${t.id.replace('rc-', '')} | ${fmt(t.value)}x | ${t.met ? 'yes' : 'NO'} | ${t.best === undefined ? '' : `${fmt(t.best)}x`} |`);
results.targets = targets;
results.elapsedS = (performance.now() - t0) / 1000;
results.machine.loadavgEnd = os.loadavg().map((x) => Number(x.toFixed(2)));
print();
print(`elapsed: ${fmt(results.elapsedS, 0)} s; load average at end: ${results.machine.loadavgEnd.join(' ')}`);

mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL(`./results/${what === 'all' ? 'latest' : what}.json`, import.meta.url), JSON.stringify(results, null, 2) + '\n');
writeFileSync(new URL(`./results/${what === 'all' ? 'latest' : what}.md`, import.meta.url), lines.join('\n') + '\n');
