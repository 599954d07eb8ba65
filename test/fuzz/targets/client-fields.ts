/** The polite client's reading of a response: `RateLimit`, `RateLimit-Policy`, `Retry-After` and HTTP dates. */
import fc from 'fast-check';
import { docLines } from '../corpus.js';
import { EDGE_NUMBERS, HOSTILE_KEYS } from '../mutate.js';
import type { FuzzTarget } from '../harness.js';
import { parseHttpDate, parsePolicy, parseRateLimit, retryAfterMs } from '../subjects.js';

const NOW = Date.UTC(2026, 11, 1, 10, 0, 0);
const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;
const LONG_DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'] as const;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;
const two = (n: number): string => String(n).padStart(2, '0');

const sfNumber = fc.oneof(fc.integer({ min: 0, max: 1000 }).map(String), fc.constantFrom('-1', '1.5', '0', '999999999999999', '9999999999999999', '1e3', '', '?1', '"5"', ':AAA=:', 'tok'));
const sfName = fc.oneof(fc.constantFrom('"default"', '"a b"', '"\\"q\\""', 'tok', 'burst', '"', '""', '*x', '10', '(a b)', '"é"'), fc.stringMatching(/^"[a-z0-9 ]{0,6}"$/));
const param = fc.tuple(fc.constantFrom('r', 'a', 't', 'w', 'q', 'qu', 'pk', 'x', 'R', ...HOSTILE_KEYS), fc.oneof(sfNumber, fc.constantFrom('"requests"', '"content-bytes"', ':cHJvamVjdA==:', ':bad', '?0'))).map(([k, v]) => `;${k}=${v}`);
const item = fc.tuple(sfName, fc.array(param, { maxLength: 5 })).map(([n, ps]) => `${n}${ps.join('')}`);

/** A `RateLimit` or `RateLimit-Policy` field: an SF List of named items (draft 10/11), an Integer list (draft 6/7), or a draft-7 Dictionary. */
export const rateLimitField: fc.Arbitrary<string> = fc.oneof(
  fc.array(item, { minLength: 1, maxLength: 4 }).map((xs) => xs.join(', ')),
  fc.array(fc.tuple(sfNumber, fc.option(fc.tuple(fc.constantFrom('w', 'comment'), sfNumber))).map(([n, p]) => `${n}${p === null ? '' : `;${p[0]}=${p[1]}`}`), { minLength: 1, maxLength: 3 }).map((xs) => xs.join(', ')),
  fc.array(fc.tuple(fc.constantFrom('limit', 'remaining', 'reset', 'policy', ...HOSTILE_KEYS), sfNumber).map(([k, v]) => `${k}=${v}`), { minLength: 1, maxLength: 4 }).map((xs) => xs.join(', ')),
);

/** An HTTP-date in one of its three forms, each part now and then out of range. */
export const httpDate: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 32 }), fc.constantFrom(...MONTHS, 'Foo'), fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 }), fc.integer({ min: 0, max: 61 }), fc.constantFrom('imf', '850', 'asctime'))
  .map(([wd, d, mon, y, h, m, s, form]) => {
    const time = `${two(h)}:${two(m)}:${two(s)}`;
    if (form === 'imf') return `${DAYS[wd] ?? 'Mon'}, ${two(d)} ${mon} ${String(y).padStart(4, '0')} ${time} GMT`;
    if (form === '850') return `${LONG_DAYS[wd] ?? 'Monday'}, ${two(d)}-${mon}-${two(y % 100)} ${time} GMT`;
    return `${DAYS[wd] ?? 'Mon'} ${mon} ${String(d).padStart(2, ' ')} ${time} ${String(y).padStart(4, '0')}`;
  });

/** A `Retry-After` value: delay-seconds, an HTTP-date, or near misses. */
export const retryAfterValue: fc.Arbitrary<string> = fc.oneof(fc.nat().map(String), fc.constantFrom(...EDGE_NUMBERS, ' 5 ', '+3', '9'.repeat(400)), httpDate);

export const clientFieldsTarget: FuzzTarget = {
  name: 'client-fields',
  arbitrary: fc.oneof(rateLimitField, retryAfterValue, httpDate),
  seeds: () => [
    '"default";r=50;t=30',
    '"burst";r=0;t=1;pk=:cHJvamVjdA==:, "daily";r=900;t=3600',
    '"default";q=100;w=60;qu="requests"',
    'limit=100, remaining=50, reset=30',
    '100;w=60, 1000;w=3600',
    'Sun, 06 Nov 1994 08:49:37 GMT',
    'Sunday, 06-Nov-94 08:49:37 GMT',
    'Sun Nov  6 08:49:37 1994',
    '120',
    // The fields as the docs print them (docs/headers.md, docs/client.md).
    ...docLines(/^(RateLimit|RateLimit-Policy|Retry-After):/i).map((l) => l.slice(l.indexOf(':') + 1).trim()),
  ],
  dictionary: [...HOSTILE_KEYS, ...EDGE_NUMBERS, ';', ',', '=', '"', ':', '(', ')', '?1', '*', ' ', 'r=', 't=', 'q=', 'w=', 'pk=', 'GMT', 'Sun, ', ' 1994 ', 'Nov'],
  run: (input) => {
    const limits = parseRateLimit(input);
    const policies = parsePolicy(input);
    for (const l of limits ?? []) if (!Number.isSafeInteger(l.r) || l.r < 0 || (l.t !== undefined && (!Number.isSafeInteger(l.t) || l.t < 0))) throw new Error(`RateLimit item ${JSON.stringify(l)} is not a count`);
    for (const p of policies ?? []) if (!Number.isSafeInteger(p.q) || p.q < 0 || (p.w !== undefined && (!Number.isSafeInteger(p.w) || p.w <= 0))) throw new Error(`RateLimit-Policy item ${JSON.stringify(p)} is not a quota`);
    const wait = retryAfterMs(input, null, NOW);
    const waitWithDate = retryAfterMs(input, input, NOW);
    for (const w of [wait, waitWithDate]) if (w !== undefined && (Number.isNaN(w) || w < 0)) throw new Error(`Retry-After ${JSON.stringify(input)} gave a wait of ${w}`);
    const date = parseHttpDate(input, NOW);
    if (date !== undefined) {
      if (!Number.isSafeInteger(date)) throw new Error(`HTTP-date ${JSON.stringify(input)} gave ${date}`);
      // The instant's year is the year written (an IMF-fixdate or asctime year is four digits, never shifted by a century);
      // only a leap second at the year's last instant lands in the next one.
      const written = /(?:^\w{3}, \d{2} \w{3} (\d{4}) )|(?: (\d{4})$)/.exec(input.trim());
      const year = written === null ? undefined : Number(written[1] ?? written[2]);
      if (year !== undefined && !input.includes('23:59:60') && new Date(date).getUTCFullYear() !== year) throw new Error(`HTTP-date ${JSON.stringify(input)} is read as ${new Date(date).toISOString()}`);
    }
    return { limits, policies, wait, waitWithDate, date };
  },
  allowed: () => false,
};
