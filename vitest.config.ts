import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { base } from './vitest.base.js';

/**
 * The everyday suite, `npm test` (and `npx vitest`): test/unit (unit and
 * property tests, everyday budgets) and test/smoke (one test per
 * integration: Redis, serve, rls, the admin page in Chromium). A test's tier
 * is its folder; everything else runs in `npm run test:full`
 * (vitest.full.config.ts). Nothing here measures time against another
 * process, so two files run at once even on two cores, and a worker keeps
 * its modules from one file to the next (`isolate: false`): loading the
 * sources again for each of ~100 files cost more than the tests. The full
 * pass runs these files again, isolated.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/unit/**/*.test.ts', 'test/smoke/**/*.test.ts'],
    maxWorkers: Math.max(2, availableParallelism() - 1),
    isolate: false,
  },
});
