import { defineConfig } from 'vitest/config';
import { base } from './vitest.base.js';

/**
 * Every folder but test/load, for `npm run test:full` (which sets
 * `RC_TEST_TIER=full`: the larger property budgets, test/helpers/tier.ts):
 * test/unit and test/smoke again, test/integration, test/faults, test/fuzz
 * and test/browser. One file at a time (vitest's default of CPUs - 1
 * workers): the fault tests hold deadlines of a few ms. The load tests
 * measure scheduling and run after this, in their own pass
 * (vitest.load.config.ts), never beside other files.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/**/*.test.ts'],
    exclude: ['test/load/**', '**/node_modules/**'],
  },
});
