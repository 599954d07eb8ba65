import { describe } from 'vitest';
import { fuzzSuite } from './suite.js';
import { contractTarget } from './targets/contract.js';

describe('fuzz: contract', () => {
  fuzzSuite(contractTarget, { minRuns: 50, long: false });
});
