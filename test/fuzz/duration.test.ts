import { describe } from 'vitest';
import { fuzzSuite } from './suite.js';
import { durationTarget } from './targets/duration.js';

describe('fuzz: duration', () => {
  fuzzSuite(durationTarget, { minRuns: 20000 });
});
