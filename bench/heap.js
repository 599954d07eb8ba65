// Heap bytes per key: each contender in a fresh child process
// (`node --expose-gc`), gc, heapUsed, 1,000,000 distinct keys with one
// decision each, gc, heapUsed; reported as (after - before) / keys.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { contenders } from './contenders.js';

const child = fileURLToPath(new URL('./heap-child.js', import.meta.url));

export function runHeap({ keys = 1_000_000, timeoutMs = 90_000, log = () => {} } = {}) {
  const ids = Object.keys(contenders).filter((id) => contenders[id].heap);
  const out = {};
  for (const id of ids) {
    const r = spawnSync(process.execPath, ['--expose-gc', child, id, String(keys)], {
      encoding: 'utf8',
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    if (r.status !== 0) {
      throw new Error(`heap child for ${id} failed (status ${r.status}, signal ${r.signal}): ${r.stderr}`);
    }
    const res = JSON.parse(r.stdout.trim().split('\n').pop());
    out[id] = { label: contenders[id].label, ...res };
    log(`  ${id.padEnd(18)} ${res.bytesPerKey.toFixed(1).padStart(7)} B/key  stored=${res.storedKeys}  timers/key=${res.timersPerKey}  rejected=${res.rejected}  (${(res.insertMs / 1000).toFixed(1)} s)`);
  }
  return out;
}
