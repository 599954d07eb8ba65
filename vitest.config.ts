import { defineConfig } from 'vitest/config';

/** Tests import the packages' sources: `ratecontract` resolves to packages/ratecontract/src through this condition of its exports map. */
const conditions = ['@ratecontract/source'];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['test/**/*.test.ts'],
    // The load tests measure scheduling: they run in their own pass (vitest.load.config.ts), never beside other files.
    exclude: ['test/load/**', '**/node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Memory-bound tests measure the heap after a collection.
    execArgv: ['--expose-gc'],
  },
});
