// Preloaded into every process bench/soak.js runs (node --expose-gc --import bench/soak-probe.mjs ...):
// every SOAK_PROBE_MS (default 60000) it collects garbage and appends one JSON line to SOAK_PROBE_FILE:
// { t, heapUsed (bytes, after a full collection), rss (bytes), handles (active resources), fds (open file descriptors) }.
// The timer is unref()'d, so it never holds the process open.
import { appendFileSync, readdirSync } from 'node:fs';

const file = process.env.SOAK_PROBE_FILE;
const every = Number(process.env.SOAK_PROBE_MS ?? 60_000);
if (file !== undefined && file !== '') {
  const sample = () => {
    globalThis.gc?.();
    globalThis.gc?.();
    const m = process.memoryUsage();
    let fds = -1;
    try {
      fds = readdirSync('/proc/self/fd').length;
    } catch {
      // not Linux
    }
    appendFileSync(file, JSON.stringify({ t: Date.now(), heapUsed: m.heapUsed, rss: m.rss, handles: process.getActiveResourcesInfo().length, fds }) + '\n');
  };
  setInterval(sample, every).unref();
}
