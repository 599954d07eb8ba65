// Summarises a .cpuprofile as microseconds per operation, inclusive and self,
// by function (not mapped to src/; see prof-lines.cjs for that):
//   node prof-per-op.cjs <file.cpuprofile> <operations> [regex] [top]
// <operations>: how many requests or decisions the profiled process served
// (wrk's requests/s x seconds for http-profile.js; for redis-profile.js the
// child's decisions x 1.25, counting its 1 s warm-up at the measured rate).
// [regex] keeps matching rows ("function url:line"); [top] rows, default 40.
const fs = require('node:fs');

const [file, opsArg, re = '.', topArg = '40'] = process.argv.slice(2);
if (file === undefined || !(Number(opsArg) > 0)) {
  console.error('usage: node prof-per-op.cjs <file.cpuprofile> <operations> [regex] [top]');
  process.exit(2);
}
const ops = Number(opsArg);
const p = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
// Time per sample: timeDeltas[i] is the time before sample i, so sample i lasts timeDeltas[i + 1].
const selfUs = new Map();
p.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i + 1] ?? 0)));
const name = (n) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(dist|bench|node_modules)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
const incl = new Map();
const self = new Map();
for (const [id, us] of selfUs) {
  const seen = new Set();
  let x = id;
  self.set(name(byId.get(id)), (self.get(name(byId.get(id))) ?? 0) + us);
  while (x !== undefined) {
    const k = name(byId.get(x));
    if (!seen.has(k)) {
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + us);
    }
    x = parent.get(x);
  }
}
const filter = new RegExp(re);
console.log(`us per operation (${ops.toLocaleString('en-US')} operations): inclusive, self, function`);
[...incl]
  .filter(([k]) => filter.test(k))
  .sort((a, b) => b[1] - a[1])
  .slice(0, Number(topArg))
  .forEach(([k, us]) => console.log(`${(us / ops).toFixed(3).padStart(9)} ${((self.get(k) ?? 0) / ops).toFixed(3).padStart(9)}  ${k}`));
