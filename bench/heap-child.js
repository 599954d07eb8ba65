// One heap measurement in a fresh process: `node --expose-gc heap-child.js <contender> [keys]`.
// Prints one JSON line and exits by itself (every timer the contenders start is unref'd).

import { contenders, keyOf, PROFILES } from './contenders.js';

const id = process.argv[2];
const KEYS = Number(process.argv[3] ?? 1_000_000);
const contender = contenders[id];
if (contender === undefined || typeof globalThis.gc !== 'function') {
  console.error('usage: node --expose-gc heap-child.js <contender> [keys]');
  process.exit(2);
}

// Counts timers the contender starts while keys are inserted (a timer per key shows as ~1 per key).
let timersStarted = 0;
for (const name of ['setTimeout', 'setInterval']) {
  const original = globalThis[name];
  globalThis[name] = function countedTimer(...args) {
    timersStarted++;
    return original.apply(this, args);
  };
}

function collect() {
  for (let i = 0; i < 4; i++) globalThis.gc();
}

// Warm up on a throwaway instance so compiled code and lazily built
// structures are not billed to the measured keys.
{
  const warm = contender.create(PROFILES.heap);
  for (let i = 0; i < 20_000; i++) await warm.decide(`warm-${i % 1000}`);
}

const c = contender.create(PROFILES.heap);
collect();
const mem0 = process.memoryUsage();
const before = mem0.heapUsed;
timersStarted = 0;
const t0 = performance.now();
for (let i = 0; i < KEYS; i++) await c.decide(keyOf(i));
const insertMs = performance.now() - t0;
const timersPerKey = timersStarted / KEYS;
collect();
const mem1 = process.memoryUsage();
const after = mem1.heapUsed;
const result = {
  id,
  keys: KEYS,
  heapBefore: before,
  heapAfter: after,
  bytesPerKey: (after - before) / KEYS,
  // Off-heap state (ArrayBuffer backing stores) is not in heapUsed: reported so it cannot hide.
  arrayBufferBytesPerKey: (mem1.arrayBuffers - mem0.arrayBuffers) / KEYS,
  insertMs,
  timersPerKey,
  rejected: c.rejected(),
  ...c.inspect(),
};
process.stdout.write(JSON.stringify(result) + '\n');
