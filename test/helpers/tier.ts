/**
 * Which command is running the tests, for the budgets that depend on it.
 *
 * A test file's tier is its folder, chosen by the vitest configs and never by
 * the file: `npm test` (vitest.config.ts) runs test/unit and test/smoke;
 * `npm run test:full` (vitest.full.config.ts, then vitest.load.config.ts and
 * the Valkey pass) runs every folder. The full command also sets
 * `RC_TEST_TIER=full`, and the budgets of the property and differential
 * tests grow with it (fc-budget.ts, test/integration/redis). Unset or
 * `everyday`: the everyday budgets. Anything else is a mistake and throws.
 * See docs/testing.md.
 */
export type TestTier = 'everyday' | 'full';

function tierOf(value: string | undefined): TestTier {
  if (value === undefined || value === '' || value === 'everyday') return 'everyday';
  if (value === 'full') return 'full';
  throw new Error(`RC_TEST_TIER must be 'everyday' or 'full', got ${JSON.stringify(value)}`);
}

/** The tier of this run: `RC_TEST_TIER`. */
export const TEST_TIER: TestTier = tierOf(process.env.RC_TEST_TIER);

/** True when `npm run test:full` (or CI, which runs it) sets `RC_TEST_TIER=full`: the larger budgets. */
export const FULL_BUDGETS = TEST_TIER === 'full';
