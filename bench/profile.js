// Profiling helper (not a benchmark): drives one contender in a tight awaited
// loop so a profiler sees only its decision path.
//   node --cpu-prof --cpu-prof-dir=results/prof profile.js rc-gcra hot 3
//   node --prof profile.js rc-gcra spread 3 && node --prof-process isolate*.log
import { contenders, keyOf, PROFILES } from './contenders.js';

const [id = 'rc-gcra', scenario = 'hot', seconds = '3'] = process.argv.slice(2);
const c = contenders[id].create(PROFILES.throughput);
const n = scenario === 'hot' ? 1 : 100_000;
const keys = Array.from({ length: n }, (_, i) => keyOf(i));
const end = performance.now() + Number(seconds) * 1000;
let done = 0;
let i = 0;
while (performance.now() < end) {
  for (let j = 0; j < 10_000; j++) {
    await c.decide(keys[i]);
    i = i + 1 === n ? 0 : i + 1;
  }
  done += 10_000;
}
console.log(`${id} ${scenario}: ${Math.round(done / Number(seconds)).toLocaleString('en-US')} decisions/s, rejected ${c.rejected()}`);
