import { parseHttpDate } from './http-date.js';

const DELAY_SECONDS = /^\d+$/;

/**
 * The wait in ms a `Retry-After` value asks for, or `undefined` when the
 * value is absent or malformed (then it is ignored, as if not sent).
 *
 * - delay-seconds (`120`): that many seconds. Only digits: `1.5`, `-1`,
 *   `+3` and `1e3` are malformed.
 * - an HTTP-date: the date minus the response's own `Date` when that is a
 *   valid HTTP-date (so a client clock that is fast or slow does not shorten
 *   or stretch the wait), else minus `now`. A date in the past is a wait of 0.
 *
 * The result is never negative and may be `Infinity` for an absurdly long
 * delay-seconds; callers compare it with `maxRetryAfter`.
 */
export function retryAfterMs(value: string | null | undefined, date: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (DELAY_SECONDS.test(v)) return Number(v) * 1000;
  const at = parseHttpDate(v, now);
  if (at === undefined) return undefined;
  const served = date === null || date === undefined ? undefined : parseHttpDate(date, now);
  return Math.max(0, at - (served ?? now));
}
