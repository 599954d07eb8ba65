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
  'fixed-window': fixedWindow as Algorithm<unknown>,
  'sliding-log': slidingLog as Algorithm<unknown>,
  'sliding-window': slidingWindow as Algorithm<unknown>,
  'token-bucket': tokenBucket as Algorithm<unknown>,
  'leaky-bucket': leakyBucket as Algorithm<unknown>,
  gcra: gcra as Algorithm<unknown>,
  concurrency: concurrency as Algorithm<unknown>,
};
