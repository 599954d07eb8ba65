// Summarises a .cpuprofile by source line, mapped back to src/ through dist's
// source maps: node prof-lines.cjs results/prof/<name>.cpuprofile [top]
const fs = require('node:fs');
const { SourceMap } = require('node:module');
const { fileURLToPath } = require('node:url');
const path = require('node:path');

const [file, topArg = '30'] = process.argv.slice(2);
const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
const total = prof.samples.length;
const maps = new Map();
function mapOf(url) {
  if (!maps.has(url)) {
    let m = null;
    try {
      const js = url.startsWith('file:') ? fileURLToPath(url) : url;
      if (fs.existsSync(js + '.map')) {
        const text = fs.readFileSync(js, 'utf8').split('\n');
        m = { map: new SourceMap(JSON.parse(fs.readFileSync(js + '.map', 'utf8'))), dir: path.dirname(js), text };
      }
    } catch {}
    maps.set(url, m);
  }
  return maps.get(url);
}
const self = new Map();
const lines = new Map();
const counts = new Map();
for (const id of prof.samples) counts.set(id, (counts.get(id) ?? 0) + 1);
for (const n of prof.nodes) {
  const c = counts.get(n.id) ?? 0;
  const fn = `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(dist|bench)\//, '$1/')}`;
  self.set(fn, (self.get(fn) ?? 0) + c);
  const m = mapOf(n.callFrame.url);
  for (const t of n.positionTicks ?? []) {
    let where = `${n.callFrame.url.replace(/^.*\/(dist|bench)\//, '$1/')}:${t.line}`;
    if (m) {
      const src = m.text[t.line - 1] ?? '';
      const e = m.map.findEntry(t.line - 1, src.length - src.trimStart().length);
      if (e && e.originalSource) where = `${path.relative(path.resolve(m.dir, '..', '..'), path.resolve(m.dir, e.originalSource)).replace(/^(\.\.\/)+/, '')}:${e.originalLine + 1}`;
    }
    const k = `${where} (${n.callFrame.functionName || 'anonymous'})`;
    lines.set(k, (lines.get(k) ?? 0) + t.ticks);
  }
}
const pct = (c) => ((100 * c) / total).toFixed(1).padStart(5) + '%';
console.log(`samples: ${total}\nself time by function:`);
[...self].sort((a, b) => b[1] - a[1]).slice(0, 15).forEach(([k, c]) => console.log(pct(c), k));
console.log('self time by source line (ratecontract lines mapped to src/):');
[...lines].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg)).forEach(([k, c]) => console.log(pct(c), k));
