import { ROOT } from '../../helpers/paths.js';
import { bundle, defineDistEntriesTest, defineRuntimeSuite, jsonPort, runtimeBin, spawnServer } from './helpers.js';

// Only the network permission: the library reads no file and no environment variable on Deno.
defineRuntimeSuite('deno', async (dir) => {
  const bin = runtimeBin('deno');
  await bundle('deno-entry.ts', dir);
  return spawnServer(bin, ['run', '--allow-net=127.0.0.1', '--no-prompt', 'bundle.js'], dir, jsonPort);
});

// Unbundled, Deno reads the package files under node_modules: read access to the repository, nothing else.
defineDistEntriesTest('deno', () => runtimeBin('deno'), ['run', `--allow-read=${ROOT}`, '--no-prompt']);
