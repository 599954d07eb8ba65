// One throughput measurement in a fresh process:
//   node --expose-gc throughput-child.js <contender> <keys> <minCpuMs> [cpu|wall]
// A fresh process per measurement keeps V8's type feedback private to one
// contender and one algorithm, as in an application with one limiter: code
// shared by several contenders (ratecontract's algorithms run through the
// same store code) would otherwise turn megamorphic and slow down whichever
// runs later. Prints one JSON line and exits by itself.

import { measure } from 'mitata';
import { contenders, keyOf, PROFILES } from './contenders.js';

const [id, keysArg = '1', minCpuArg = '400', clock = 'cpu'] = process.argv.slice(2);
const contender = contenders[id];
if (contender === undefined) {
  console.error('usage: node --expose-gc throughput-child.js <contender> <keys> <minCpuMs>');
  process.exit(2);
}
const n = Number(keysArg);
const c = contender.create(PROFILES.throughput);
const keys = Array.from({ length: n }, (_, i) => keyOf(i));
// One full pass first: the measured phase updates live state for every key.
for (let i = 0; i < n; i++) await c.decide(keys[i]);
let i = 0;
const fn =
  n === 1
    ? () => c.decide(keys[0])
    : () => {
        const k = keys[i];
        i = i + 1 === n ? 0 : i + 1;
        return c.decide(k);
      };
if (typeof globalThis.gc === 'function') globalThis.gc();
// Clock: by default this process's CPU time (user + system, all threads, so GC
// helper threads count), which time spent descheduled by other processes on a
// shared machine cannot inflate; 'wall' uses mitata's wall clock.
const cpuNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1e3;
};
// mitata decides from one or two wall-clock-timed warm-up calls whether to time
// batches of 4,096 calls or single calls; one preempted warm-up call on a busy
// machine would switch it to single calls (timer cost included, 1 us CPU-clock
// granularity). Every decision here takes well under a microsecond: always batch.
const stats = await measure(fn, {
  min_cpu_time: Number(minCpuArg) * 1e6,
  warmup_threshold: Infinity,
  batch_threshold: Infinity,
  ...(clock === 'cpu' ? { now: cpuNow } : {}),
});
if (stats.ticks < 4096 * 12) throw new Error(`mitata did not batch (${stats.ticks} calls timed)`);
process.stdout.write(
  JSON.stringify({ id, keys: n, clock, avgNs: stats.avg, p50Ns: stats.p50, p99Ns: stats.p99, ticks: stats.ticks, rejected: c.rejected(), ...c.inspect() }) + '\n',
);
