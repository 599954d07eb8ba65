import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../packages/ratecontract/src/core/errors.js';
import { createFetch, DEFAULTS, type ClientOptions } from '../../../packages/ratecontract/src/client/index.js';

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
    expect(e.message).toContain('"maxAttempt"');
    expect(e.message).toContain('"retryAfterMax"');
    const nested = refused({ backoff: { bse: 10 } });
    expect(nested.option).toBe('createFetch.backoff');
    expect(nested.message).toContain('bse');
    expect(refused({ budget: { percent: 10 } }).option).toBe('createFetch.budget');
    expect(refused({ adaptiveThrottle: { K: 2 } }).option).toBe('createFetch.adaptiveThrottle');
  });

  it('gives a did-you-mean hint for a misspelt option, at every level (docs/api.md, Options)', () => {
    expect(refused({ maxAttempt: 3 }).message).toBe(
      'createFetch: unknown option "maxAttempt"; did you mean "maxAttempts"? (known: fetch, maxAttempts, maxWait, maxRetryAfter, backoff, budget, adaptiveThrottle, retryOn, retryNetworkErrors, retryMethods, pacing, partition, onWait, sleep, unref, random, clock, signal)',
    );
    expect(refused({ backoff: { bse: 10 } }).message).toBe('createFetch.backoff: unknown option "bse"; did you mean "base"? (known: base, cap, jitter)');
    expect(refused({ budget: { minRetires: 1 } }).message).toContain('did you mean "minRetries"?');
    expect(refused({ adaptiveThrottle: { K: 2 } }).message).toContain('did you mean "k"?');
    expect(refused({ unRef: true }).message).toContain('did you mean "unref"?');
    // Several at once: each one named, each with its own hint where one is close, none where nothing is.
    const several = refused({ maxAttempt: 3, retryOnn: [429], zzz: 1 }).message;
    expect(several).toMatch(/^createFetch: unknown options "maxAttempt" \(did you mean "maxAttempts"\?\), "retryOnn" \(did you mean "retryOn"\?\), "zzz" \(known: /);
    expect(refused({ zzz: 1 }).message).toMatch(/^createFetch: unknown option "zzz" \(known: /);
  });

  it('names at most 10 unknown options, however many there are', () => {
    const many = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`bogus${i}`, i]));
    const message = refused(many).message;
    expect(message).toContain('"bogus9"');
    expect(message).not.toContain('"bogus10"');
    expect(message).toContain('and 9990 more');
    expect(message.length).toBeLessThan(1000);
  });

  it('unref is a boolean, and only for the built-in timer: with your own sleep it is refused', () => {
    expect(refused({ unref: 'yes' }).option).toBe('createFetch.unref');
    const both = refused({ unref: true, sleep: () => Promise.resolve() });
    expect(both.option).toBe('createFetch.unref');
    expect(both.message).toContain('sleep');
    expect(typeof createFetch({ unref: true })).toBe('function');
    expect(typeof createFetch({ unref: false, sleep: () => Promise.resolve() })).toBe('function');
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
      retryNetworkErrors: true,
      unref: false,
    });
  });

  it('docs/client.md states the same defaults as DEFAULTS', () => {
    const doc = readFileSync(new URL('../../../docs/client.md', import.meta.url), 'utf8');
    const table = doc.slice(doc.indexOf('## Options'), doc.indexOf('## What is retried'));
    const rows = new Map<string, string>();
    for (const m of table.matchAll(/^\| `([A-Za-z.]+)` \| (.+)$/gm)) rows.set(m[1] as string, m[2] as string);
    /** The n-th code span after the option's name in its row (n = 0: the default column), read as a JS literal (single quotes and bare keys allowed). */
    const literal = (name: string, n = 0): unknown => {
      const code = [...(rows.get(name) ?? '').matchAll(/`([^`]+)`/g)][n]?.[1];
      if (code === undefined) throw new Error(`docs/client.md: no default for ${name}`);
      return JSON.parse(code.replace(/'/g, '"').replace(/([{,]\s*)([A-Za-z]+)\s*:/g, '$1"$2":')) as unknown;
    };
    const expected: Record<string, unknown> = {
      maxAttempts: DEFAULTS.maxAttempts,
      maxWait: DEFAULTS.maxWait,
      maxRetryAfter: DEFAULTS.maxRetryAfter,
      'backoff.base': DEFAULTS.backoff.base,
      'backoff.cap': DEFAULTS.backoff.cap,
      'backoff.jitter': DEFAULTS.backoff.jitter,
      budget: { ratio: DEFAULTS.budget.ratio, minRetries: DEFAULTS.budget.minRetries, window: DEFAULTS.budget.windowMs },
      adaptiveThrottle: false,
      retryOn: DEFAULTS.retryOn,
      retryNetworkErrors: DEFAULTS.retryNetworkErrors,
      retryMethods: DEFAULTS.retryMethods,
      pacing: DEFAULTS.pacing,
      unref: DEFAULTS.unref,
    };
    for (const [name, value] of Object.entries(expected)) expect(literal(name), name).toEqual(value);
    // adaptiveThrottle is off; given as {}, it takes these.
    expect(literal('adaptiveThrottle', 1)).toEqual({ k: DEFAULTS.adaptiveThrottle.k, window: DEFAULTS.adaptiveThrottle.windowMs });
  });
});
