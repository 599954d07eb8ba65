import { describe, expect, it } from 'vitest';
import { ConfigError, createFetch, DEFAULTS, type ClientOptions } from '../../src/client/index.js';

function refused(options: unknown): ConfigError {
  try {
    createFetch(options as ClientOptions);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`accepted ${JSON.stringify(options)}`);
}

describe('createFetch options', () => {
  it('refuses unknown option names, naming every one', () => {
    const e = refused({ maxAttempt: 3, retryAfterMax: 1 });
    expect(e.code).toBe('RC_INVALID_OPTION');
    expect(e.option).toBe('createFetch');
    expect(e.message).toContain('maxAttempt, retryAfterMax');
    const nested = refused({ backoff: { bse: 10 } });
    expect(nested.option).toBe('createFetch.backoff');
    expect(nested.message).toContain('bse');
    expect(refused({ budget: { percent: 10 } }).option).toBe('createFetch.budget');
    expect(refused({ adaptiveThrottle: { K: 2 } }).option).toBe('createFetch.adaptiveThrottle');
  });

  it('refuses bad values at construction, naming the option', () => {
    const cases: Array<[unknown, string]> = [
      [null, 'createFetch'],
      [{ maxAttempts: 0 }, 'createFetch.maxAttempts'],
      [{ maxAttempts: 1.5 }, 'createFetch.maxAttempts'],
      [{ maxWait: -1 }, 'createFetch.maxWait'],
      [{ maxWait: 'soon' }, 'createFetch.maxWait'],
      [{ maxRetryAfter: NaN }, 'createFetch.maxRetryAfter'],
      [{ backoff: { base: 0 } }, 'createFetch.backoff.base'],
      [{ backoff: { base: 100, cap: 50 } }, 'createFetch.backoff.cap'],
      [{ backoff: { jitter: 'random' } }, 'createFetch.backoff.jitter'],
      [{ backoff: 5 }, 'createFetch.backoff'],
      [{ budget: { ratio: -0.1 } }, 'createFetch.budget.ratio'],
      [{ budget: { minRetries: 1.5 } }, 'createFetch.budget.minRetries'],
      [{ budget: true }, 'createFetch.budget'],
      [{ adaptiveThrottle: { k: 0.5 } }, 'createFetch.adaptiveThrottle.k'],
      [{ retryOn: [200] }, 'createFetch.retryOn'],
      [{ retryOn: '429' }, 'createFetch.retryOn'],
      [{ retryMethods: ['GET', 'NOT A METHOD'] }, 'createFetch.retryMethods'],
      [{ retryNetworkErrors: 'yes' }, 'createFetch.retryNetworkErrors'],
      [{ pacing: 'fast' }, 'createFetch.pacing'],
      [{ sleep: 5 }, 'createFetch.sleep'],
      [{ random: 'x' }, 'createFetch.random'],
      [{ fetch: {} }, 'createFetch.fetch'],
      [{ onWait: true }, 'createFetch.onWait'],
      [{ partition: 'x' }, 'createFetch.partition'],
      [{ clock: {} }, 'createFetch.clock'],
      [{ signal: {} }, 'createFetch.signal'],
    ];
    for (const [options, option] of cases) {
      const e = refused(options);
      expect(e.option, JSON.stringify(options)).toBe(option);
      expect(e.message.startsWith(option)).toBe(true);
    }
  });

  it('accepts durations as strings, Infinity where documented, and false to turn budgets off', () => {
    expect(typeof createFetch({ maxWait: '2m', maxRetryAfter: Infinity, backoff: { base: '50ms', cap: '2s', jitter: 'decorrelated' } })).toBe('function');
    expect(typeof createFetch({ budget: false, adaptiveThrottle: false, maxWait: 0 })).toBe('function');
    expect(typeof createFetch()).toBe('function');
  });

  it('documents its defaults in one place', () => {
    expect(DEFAULTS).toEqual({
      maxAttempts: 3,
      maxWait: 60_000,
      maxRetryAfter: 60_000,
      backoff: { base: 100, cap: 20_000, jitter: 'full' },
      budget: { ratio: 0.1, minRetries: 10, windowMs: 10_000 },
      adaptiveThrottle: { k: 2, windowMs: 120_000 },
      retryOn: [429, 503],
      retryMethods: ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'],
      pacing: 'burst',
    });
  });
});
