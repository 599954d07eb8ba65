import { defineConfig } from 'vitest/config';
import { base } from './vitest.base.js';

/**
 * The full tier's folders that take turns, for `npm run test:full` (which
 * sets `RC_TEST_TIER=full`: the larger property budgets, test/helpers/tier.ts):
 * test/integration, test/faults, test/fuzz and test/browser, one file at a
 * time (vitest's default of CPUs - 1 workers): the fault tests hold
 * deadlines of a few ms. test/unit and test/smoke run before this with the
 * same budgets in the everyday config's two workers, each file isolated
 * (`vitest run --isolate`): nothing there measures time against another
 * process. The load tests measure scheduling and run after this, in their
 * own pass (vitest.load.config.ts), never beside other files.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/integration/**/*.test.ts', 'test/faults/**/*.test.ts', 'test/fuzz/**/*.test.ts', 'test/browser/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
  },
});
