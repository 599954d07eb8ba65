import { describe } from 'vitest';
import { fuzzSuite } from './suite.js';
import { rlsConfigTarget } from './targets/rls-config.js';

describe('fuzz: rls-config', () => {
  fuzzSuite(rlsConfigTarget, { minRuns: 50, long: false });
});
