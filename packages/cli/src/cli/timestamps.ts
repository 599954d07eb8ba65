/**
 * Time stamps as they appear in traces and access logs, to integer epoch
 * milliseconds. Every function returns `undefined` for text it does not
 * recognise, never throws.
 */

const MONTHS: Readonly<Record<string, number>> = {
  Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11,
};

/** The last instant a `Date` holds, ms (year 275760): a later time stamp is not a time. */
const MAX_DATE_MS = 8.64e15;

/** Epoch ms of a UTC date and time; unlike `Date.UTC`, a year below 100 is that year, not 1900 + year. */
function utc(year: number, month: number, day: number, h: number, m: number, s: number, ms: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, day);
  d.setUTCHours(h, m, s, ms);
  return d.getTime();
}

const CLF = /^(\d{2})\/([A-Z][a-z]{2})\/(\d{4}):(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))? ([+-])(\d{2})(\d{2})$/;

/**
 * The common log format's time, as nginx `$time_local` and Apache `%t` write
 * it without the brackets: `10/Oct/2000:13:55:36 -0700` (milliseconds after
 * the seconds are accepted too).
 */
export function parseClfTime(text: string): number | undefined {
  const m = CLF.exec(text);
  if (m === null) return undefined;
  const month = MONTHS[m[2] as string];
  if (month === undefined) return undefined;
  const [day, year, hh, mm, ss] = [m[1], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number];
  if (day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60) return undefined;
  const ms = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0'));
  const offset = (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10])) * 60_000;
  const t = utc(year, month, day, hh, mm, ss, ms) - offset;
  return t >= 0 ? t : undefined;
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/**
 * An ISO 8601 / RFC 3339 date-time: `2026-12-01T10:00:00.250Z`,
 * `2026-12-01 10:00:00+01:00`. Without a zone it is UTC (logs rarely mean the
 * reader's local time). Fractions below a millisecond are dropped.
 */
export function parseIsoTime(text: string): number | undefined {
  const m = ISO.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hh, mm] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const ss = m[6] === undefined ? 0 : Number(m[6]);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60) return undefined;
  const ms = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  let offset = 0;
  const zone = m[8];
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    offset = (zone.startsWith('-') ? -1 : 1) * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0')) * 60_000;
  }
  const t = utc(year, month - 1, day, hh, mm, ss, ms) - offset;
  return t >= 0 ? t : undefined;
}

/**
 * A number of a log's time field: epoch milliseconds when at least 10^12
 * (after September 2001), else epoch seconds with an optional fraction
 * (nginx `$msec`). Negative and non-finite values are refused, and so are
 * those past the last instant a `Date` holds (8.64e15 ms, year 275760).
 */
export function epochFromNumber(value: number): number | undefined {
  if (!Number.isFinite(value) || value < 0) return undefined;
  // Seconds with a fraction are milliseconds written in decimal: round, as 1.95 * 1000 is 1949.999...
  const ms = value >= 1e12 ? Math.floor(value) : Math.round(value * 1000);
  return ms <= MAX_DATE_MS ? ms : undefined;
}

/** A time field's value in any of the forms above (strings of digits count as numbers). */
export function parseTimeValue(value: unknown): number | undefined {
  if (typeof value === 'number') return epochFromNumber(value);
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^\d+(?:\.\d+)?$/.test(text)) return epochFromNumber(Number(text));
  return parseIsoTime(text) ?? parseClfTime(text);
}

/** Field names a JSON log line's time is read from, first present wins (ISO, common log time, or an epoch number). */
export const TIME_FIELDS: readonly string[] = ['time', 'timestamp', 'ts', '@timestamp', 'time_iso8601', 'time_local', 'msec', 'date'];
