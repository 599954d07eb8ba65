import { bundle, defineDistEntriesTest, defineRuntimeSuite, jsonPort, runtimeBin, spawnServer } from './helpers.js';

defineRuntimeSuite('bun', async (dir) => {
  const bin = runtimeBin('bun');
  await bundle('bun-entry.ts', dir);
  return spawnServer(bin, ['bundle.js'], dir, jsonPort);
});

defineDistEntriesTest('bun', () => runtimeBin('bun'), []);
