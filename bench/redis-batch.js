// The Redis store's batch size, compared (not part of bench:redis): the
// one-limit check over ioredis (rc-gcra) and node-redis
// (rc-gcra-node-redis) and the four-limit chain (rc-chain4), 50 in flight,
// as bench:redis measures them, with batching off and with maxChecks 16
// (the ioredis default) and 64 (the node-redis one), alternated for BENCH_ROUNDS rounds
// (default 3), each in a fresh child process. Prints medians: decisions/s,
// client and redis-server CPU per decision, script calls per decision.
//   node redis-batch.js      (starts and stops its own redis-server; about 2.5 min)
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startRedis } from './redis-server.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const sizes = ['off', '16', '64'];
const ids = ['rc-gcra', 'rc-gcra-node-redis', 'rc-chain4'];
const child = fileURLToPath(new URL('./redis-child.js', import.meta.url));
const r = await startRedis({ maxSeconds: 600, log: (s) => process.stderr.write(s + '\n') });
const runs = {};
try {
  for (let round = 0; round < rounds; round++) {
    for (const id of ids) {
      for (const size of round % 2 === 0 ? sizes : [...sizes].reverse()) {
        const x = spawnSync(process.execPath, [child, id, String(r.port), '1000', '3000', '50'], {
          encoding: 'utf8',
          timeout: 60_000,
          killSignal: 'SIGKILL',
          env: { ...process.env, BENCH_BATCH_MAX_CHECKS: size },
        });
        if (x.status !== 0) throw new Error(`${id} batch ${size} failed: ${x.stderr}`);
        const m = JSON.parse(x.stdout.trim().split('\n').pop());
        (runs[`${id} ${size}`] ??= []).push(m);
        process.stderr.write(`round ${round + 1} ${id} batch ${size}: ${Math.round(m.perSec)}/s\n`);
      }
    }
  }
} finally {
  await r.stop();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f = (x, d = 1) => x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
console.log(`| contender | batch | decisions/s | client CPU us/decision | redis-server CPU us/decision | script calls per decision | timeouts |`);
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
for (const id of ids) {
  for (const size of sizes) {
    const ms = runs[`${id} ${size}`];
    const label = size === 'off' ? '`batch: false`' : `\`maxChecks: ${size}\``;
    console.log(
      `| ${id} | ${label} | ${f(median(ms.map((m) => m.perSec)), 0)} | ${f(median(ms.map((m) => m.clientCpuUsPerDecision)))} | ${f(median(ms.map((m) => m.redisCpuUsPerDecision)))} | ${f(median(ms.map((m) => m.scriptsPerDecision)), 3)} | ${ms.reduce((a, m) => a + m.diagnostics.timeout, 0)} |`,
    );
  }
}
