import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseHttpDate, retryAfterMs } from '../../../packages/ratecontract/src/client/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';
import { asctime, imf, rfc850 } from './helpers.js';

const NOW = Date.UTC(2026, 11, 1, 9, 0, 0);

describe('parseHttpDate', () => {
  it('reads the three forms of RFC 9110 as the same instant', () => {
    const t = Date.UTC(1994, 10, 6, 8, 49, 37);
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(t);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', NOW)).toBe(t);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994', NOW)).toBe(t);
  });

  it('puts a two-digit year more than 50 years ahead in the past century', () => {
    expect(parseHttpDate('Tuesday, 01-Dec-26 09:00:00 GMT', NOW)).toBe(Date.UTC(2026, 11, 1, 9));
    expect(parseHttpDate('Tuesday, 01-Dec-76 09:00:00 GMT', NOW)).toBe(Date.UTC(2076, 11, 1, 9));
    expect(parseHttpDate('Thursday, 01-Dec-77 09:00:00 GMT', NOW)).toBe(Date.UTC(1977, 11, 1, 9));
    expect(parseHttpDate('Thursday, 01-Dec-94 09:00:00 GMT', NOW)).toBe(Date.UTC(1994, 11, 1, 9));
  });

  it('refuses what is not an HTTP-date', () => {
    for (const bad of [
      '',
      'soon',
      '2026-12-01T09:00:00Z',
      'Sun, 06 Nov 1994 08:49:37 UTC',
      'Sun, 6 Nov 1994 08:49:37 GMT',
      'Sun, 31 Nov 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 24:00:00 GMT',
      'Sun, 06 Foo 1994 08:49:37 GMT',
      'Sunday, 06-Nov-1994 08:49:37 GMT',
      'Sun Nov 6 08:49:37 1994',
      'Xyz, 06 Nov 1994 08:49:37 GMT',
    ]) {
      expect(parseHttpDate(bad, NOW), bad).toBeUndefined();
    }
  });
});

describe('retryAfterMs', () => {
  it('reads delay-seconds as whole seconds, and only digits', () => {
    expect(retryAfterMs('120', null, NOW)).toBe(120_000);
    expect(retryAfterMs(' 0 ', null, NOW)).toBe(0);
    for (const bad of ['1.5', '-1', '+3', '1e3', '0x10', 'ten', '', '12 s']) expect(retryAfterMs(bad, null, NOW), bad).toBeUndefined();
    expect(retryAfterMs(null, null, NOW)).toBeUndefined();
  });

  it('reads a date against the response Date, so a skewed client clock changes nothing', () => {
    const server = NOW + 3_600_000; // the client clock is an hour behind the server's
    for (const form of [imf, rfc850, asctime]) {
      expect(retryAfterMs(form(server + 5000), imf(server), NOW)).toBe(5000);
      expect(retryAfterMs(form(server + 5000), imf(server), NOW + 7_200_000)).toBe(5000);
    }
  });

  it('reads a date against the client clock when the response has no valid Date', () => {
    for (const form of [imf, rfc850, asctime]) {
      expect(retryAfterMs(form(NOW + 7000), null, NOW)).toBe(7000);
      expect(retryAfterMs(form(NOW + 7000), 'yesterday', NOW)).toBe(7000);
    }
  });

  it('makes a date in the past a wait of 0', () => {
    expect(retryAfterMs(imf(NOW - 60_000), null, NOW)).toBe(0);
    expect(retryAfterMs(imf(NOW - 60_000), imf(NOW), NOW + 1)).toBe(0);
  });

  it('property: a date form gives date minus the Date header, whatever the client clock', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1971, 0, 1) / 1000, max: Date.UTC(2060, 0, 1) / 1000 }),
        fc.integer({ min: -86_400, max: 86_400 }),
        fc.integer({ min: -10 * 86_400_000, max: 10 * 86_400_000 }),
        fc.constantFrom(imf, rfc850, asctime),
        (serverSec, deltaSec, skew, form) => {
          const served = serverSec * 1000;
          const got = retryAfterMs(form(served + deltaSec * 1000), imf(served), served + skew);
          expect(got).toBe(Math.max(0, deltaSec * 1000));
        },
      ),
      fcBudget(),
    );
  });
});
