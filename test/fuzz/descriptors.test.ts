import { describe } from 'vitest';
import { fuzzSuite } from './suite.js';
import { descriptorsTarget } from './targets/descriptors.js';

describe('fuzz: descriptors', () => {
  fuzzSuite(descriptorsTarget, { minRuns: 1000 });
});
