import { concurrency } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingLog } from './sliding-log.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';
import type { Algorithm, AlgorithmName } from './types.js';

/** Every built-in algorithm by name. */
export const algorithms: Readonly<Record<AlgorithmName, Algorithm<unknown>>> = {
  'fixed-window': fixedWindow,
  'sliding-log': slidingLog,
  'sliding-window': slidingWindow,
  'token-bucket': tokenBucket,
  'leaky-bucket': leakyBucket,
  gcra: gcra,
  concurrency: concurrency,
};
