import { describe } from 'vitest';
import { fuzzSuite } from './suite.js';
import { forwardedTarget } from './targets/forwarded.js';

describe('fuzz: forwarded', () => {
  fuzzSuite(forwardedTarget, { minRuns: 2000 });
});
