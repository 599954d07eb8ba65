import { describe } from 'vitest';
import { fuzzSuite } from './suite.js';
import { clientFieldsTarget } from './targets/client-fields.js';

describe('fuzz: client-fields', () => {
  fuzzSuite(clientFieldsTarget, { minRuns: 2000 });
});
