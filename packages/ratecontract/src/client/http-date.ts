/**
 * HTTP-date (RFC 9110 section 5.6.7) in its three forms, parsed strictly:
 *
 * - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT` (the one servers must send);
 * - RFC 850:     `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete, two-digit year);
 * - asctime:     `Sun Nov  6 08:49:37 1994` (obsolete, no zone: UTC).
 *
 * `Date.parse` is not used: it accepts many other shapes, differs between
 * engines, and reads a zoneless date as local time. The day of the week is
 * checked to be a valid name but not against the date (a wrong weekday is a
 * server bug that does not change the instant). Second 60 (a leap second) is
 * accepted and lands on the next minute, as POSIX time does.
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';

const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC_850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

function instant(year: number, month: string, day: number, h: number, m: number, s: number): number | undefined {
  const mi = MONTHS.indexOf(month as (typeof MONTHS)[number]);
  if (mi < 0 || h > 23 || m > 59 || s > 60 || day < 1) return undefined;
  // Not Date.UTC, which reads a year below 100 as 1900 + year: `0094` is the year 94.
  const d = new Date(0);
  d.setUTCFullYear(year, mi, day);
  // Day 31 of a 30-day month would roll over: refuse it.
  if (d.getUTCDate() !== day) return undefined;
  d.setUTCHours(h, m, s);
  return d.getTime();
}

/**
 * RFC 9110: a two-digit year that appears to be more than 50 years in the
 * future is the most recent past year with the same last two digits.
 */
function fullYear(yy: number, now: number): number {
  const current = new Date(now).getUTCFullYear();
  let year = Math.floor(current / 100) * 100 + yy;
  if (year > current + 50) year -= 100;
  return year;
}

/**
 * The instant of an HTTP-date in ms since the epoch, or `undefined` if
 * `value` is not one. `now` (ms) resolves the century of an RFC 850 year.
 */
export function parseHttpDate(value: string, now: number): number | undefined {
  const v = value.trim();
  let m = IMF_FIXDATE.exec(v);
  if (m !== null) return instant(Number(m[3]), m[2] as string, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  m = RFC_850.exec(v);
  if (m !== null) return instant(fullYear(Number(m[3]), now), m[2] as string, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  m = ASCTIME.exec(v);
  if (m !== null) return instant(Number(m[6]), m[1] as string, Number((m[2] as string).trim()), Number(m[3]), Number(m[4]), Number(m[5]));
  return undefined;
}
