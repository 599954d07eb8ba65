import { describe } from 'vitest';
import { fuzzSuite } from './suite.js';
import { logLinesTarget } from './targets/log-lines.js';

describe('fuzz: log-lines', () => {
  fuzzSuite(logLinesTarget, { minRuns: 2000 });
});
