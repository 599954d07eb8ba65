// Profiling helper (not a benchmark): runs one Redis contender as bench:redis
// does (50 in flight, its own redis-server), with the V8 CPU profiler on the
// client process.
//   node redis-profile.js rc-gcra [seconds]
//   node prof-lines.cjs results/prof/redis-rc-gcra.cpuprofile
// Pinned as redis-pinned.js pins: redis-server on CPU 1, the profiled client on CPU 0.
// Extra environment (BENCH_KEYS, BENCH_BATCH_MAX_CHECKS) passes through to the child.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CLIENT_CPU, SERVER_CPU } from './redis-pinned.js';
import { startRedis } from './redis-server.js';

const [id = 'rc-gcra', seconds = '4'] = process.argv.slice(2);
const r = await startRedis({ maxSeconds: 120, log: (s) => process.stderr.write(s + '\n'), cpu: SERVER_CPU });
try {
  const x = spawnSync(
    'taskset',
    [
      '-c',
      String(CLIENT_CPU),
      process.execPath,
      '--cpu-prof',
      `--cpu-prof-dir=${fileURLToPath(new URL('./results/prof/', import.meta.url))}`,
      `--cpu-prof-name=redis-${id}.cpuprofile`,
      fileURLToPath(new URL('./redis-child.js', import.meta.url)),
      id,
      String(r.port),
      '1000',
      String(Number(seconds) * 1000),
      '50',
    ],
    { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' },
  );
  process.stdout.write(x.stdout);
  process.stderr.write(x.stderr);
  console.log(`profile: results/prof/redis-${id}.cpuprofile`);
} finally {
  await r.stop();
}
