import { defineConfig } from 'vitest/config';

/**
 * The load tests (test/load): a user's process in a closed loop against a
 * real redis-server, each pinned to its own CPU. One file at a time, and
 * after every other test file, so nothing else competes for the two cores.
 */
export default defineConfig({
  test: {
    include: ['test/load/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
