import type { ViteUserConfig } from 'vitest/config';

/** Tests import the packages' sources: `ratecontract` resolves to packages/ratecontract/src through this condition of its exports map. */
const conditions = ['@ratecontract/source'];

/**
 * What every pass shares (vitest.config.ts, vitest.full.config.ts): the
 * sources through their condition, one forked process per file, and
 * `--expose-gc` for the tests that measure the heap after a collection.
 * Which folders a pass runs is its own; see docs/testing.md.
 */
export const base = {
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    execArgv: ['--expose-gc'],
  },
} as const satisfies ViteUserConfig;
