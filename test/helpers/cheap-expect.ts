import { isDeepStrictEqual } from 'node:util';
import { expect } from 'vitest';

/**
 * Assertions for the hot loops of property tests, which check the same
 * thing hundreds of thousands of times: each compares first and builds the
 * vitest expectation only when the comparison fails, where that expectation
 * fails with its usual report. The verdict is the matcher's own.
 */

/**
 * `expect(actual).toEqual(expected)`, built only when the two are not
 * `isDeepStrictEqual` (which never calls equal what `toEqual` calls
 * different: it is the stricter of the two on plain data).
 */
export function expectEqual(actual: unknown, expected: unknown, message?: () => string): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual, message?.()).toEqual(expected);
}
