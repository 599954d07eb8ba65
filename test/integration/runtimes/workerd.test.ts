import { bundle, defineRuntimeSuite, freePort, runtimeBin, spawnServer, writeWorkerdConfig, type WorkerdCompat } from './helpers.js';

// Two configurations: this workerd's own compatibility date (node APIs on by default, setTimeout returns a
// Timeout, node:perf_hooks present), and the oldest date docs/runtimes.md supports with nodejs_compat, where
// setTimeout returns a number (no unref), process.hrtime is missing and node:perf_hooks does not exist.
const CONFIGS: readonly WorkerdCompat[] = [
  { date: '2026-11-01', flags: [] },
  { date: '2024-09-23', flags: ['nodejs_compat'] },
];

for (const compat of CONFIGS) {
  // workerd binds the address its config names: a free port found here (retried once if another process takes it first).
  defineRuntimeSuite(
    'workerd',
    async (dir) => {
      const bin = runtimeBin('workerd');
      await bundle('worker-entry.ts', dir);
      for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const config = writeWorkerdConfig(dir, port, compat);
        try {
          return await spawnServer(bin, ['serve', config], dir, (line) => (line.includes(`Listening on http://127.0.0.1:${port}`) ? port : undefined));
        } catch (e) {
          if (attempt >= 2) throw e;
        }
      }
    },
    `workerd (compatibility date ${compat.date}${compat.flags.length > 0 ? `, ${compat.flags.join(', ')}` : ''})`,
  );
}
