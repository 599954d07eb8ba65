/** Access log lines as `replay` reads them: nginx / Apache combined (and common) lines, JSON lines, and their time stamps. */
import fc from 'fast-check';
import { EDGE_NUMBERS, HOSTILE_KEYS } from '../mutate.js';
import type { FuzzTarget } from '../harness.js';
import { parseCombinedLine, parseJsonLine, parseTimeValue } from '../subjects.js';
import { own } from './shapes.js';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;
/** Largest instant a Date holds, ms. */
const MAX_DATE_MS = 8.64e15;

const two = (n: number): string => String(n).padStart(2, '0');
const digits = (n: number, width: number): string => String(n).padStart(width, '0');

const ipText = fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom('-', 'unknown', '::ffff:10.0.0.1', '[::1]:80', '1.2.3.4:5', 'a b'));

/** `10/Oct/2000:13:55:36 -0700`, with each part now and then out of range. */
const clfTime = fc
  .tuple(fc.integer({ min: 0, max: 39 }), fc.constantFrom(...MONTHS, 'jan', 'Foo', 'May'), fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 }), fc.integer({ min: 0, max: 61 }), fc.constantFrom('', '.5', '.123', '.1234'), fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 2400 }))
  .map(([d, mon, y, h, m, s, frac, sign, off]) => `${two(d)}/${mon}/${digits(y, 4)}:${two(h)}:${two(m)}:${two(s)}${frac} ${sign}${digits(off, 4)}`);

/** `2026-12-01T10:00:00.250Z` and its relatives. */
const isoTime = fc
  .tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }), fc.constantFrom('T', ' ', 't'), fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: 60 }), fc.constantFrom('', ':00', ':60', ':59.5', ':01,25', ':07.123456789'), fc.constantFrom('', 'Z', 'z', '+01:00', '-0530', '+14', '+99:99'))
  .map(([y, mo, d, sep, h, m, s, z]) => `${digits(y, 4)}-${two(mo)}-${two(d)}${sep}${two(h)}:${two(m)}${s}${z}`);

const epochText = fc.oneof(fc.integer({ min: 0, max: 2 ** 42 }).map(String), fc.double({ min: 0, max: 2e9, noNaN: true }).map((n) => n.toFixed(3)), fc.constantFrom(...EDGE_NUMBERS, '1e300', '99999999999999999999'));

const target = fc.oneof(
  fc.tuple(fc.constantFrom('/', '/otp/send', '/a/b', '*', 'http://h.example/x', 'https://h', 'h/x', '', '/%zz'), fc.constantFrom('', '?a=1', '?', '?a=1#f', '#f')).map(([p, q]) => `${p}${q}`),
  fc.webPath(),
);

const requestLine = fc.oneof(
  fc.tuple(fc.constantFrom('GET', 'POST', 'HEAD', 'get', 'PRI', 'X_Y'), target, fc.constantFrom(' HTTP/1.1', ' HTTP/2.0', '', ' HTTP/1.1 extra')).map(([m, t, v]) => `${m} ${t}${v}`),
  fc.constantFrom('-', '\\x16\\x03\\x01', 'GET', 'a\\"b c'),
);

const quoted = fc.oneof(fc.constantFrom('-', 'curl/8.5', 'a \\"q\\" \\x22x\\x22', 'https://a.example/'), fc.string({ maxLength: 12 }).map((s) => s.replace(/["\\]/g, '')));

/** A combined or common log line. */
export const combinedLine: fc.Arbitrary<string> = fc
  .tuple(ipText, fc.constantFrom('-', 'alice', ''), fc.oneof(clfTime, isoTime), requestLine, fc.integer({ min: 0, max: 1000 }), fc.constantFrom('0', '17', '-', 'x'), fc.option(fc.tuple(quoted, quoted)), fc.constantFrom('', ' 0.005', ' "extra"'))
  .map(([ip, user, time, req, status, size, tail, more]) => `${ip} - ${user} [${time}] "${req}" ${String(status).padStart(3, '0')} ${size}${tail === null ? '' : ` "${tail[0]}" "${tail[1]}"`}${more}`);

const jsonValue = (valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 6, arbitrary: valid }, { weight: 1, arbitrary: fc.oneof(fc.constant(null), fc.integer(), fc.string({ maxLength: 6 }), fc.constant([1]), fc.constant({ a: 1 }), fc.constant(1e300)) });

/** A JSON log line: an object with some of the fields `replay` reads, under their several names, and hostile keys. */
export const jsonLine: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom('time', 'timestamp', 'ts', '@timestamp', 'time_iso8601', 'time_local', 'msec', 'date'),
    jsonValue(fc.oneof(isoTime, clfTime, epochText, fc.double({ min: 0, max: 2e12, noNaN: true }), fc.constantFrom(1e300, -1, 1e16))),
    fc.constantFrom('method', 'request_method'),
    jsonValue(fc.constantFrom('GET', 'post', 'X-Y', '1GET', '')),
    fc.constantFrom('path', 'uri', 'request_uri', 'url'),
    jsonValue(target),
    fc.constantFrom('ip', 'remote_addr', 'client_ip'),
    jsonValue(ipText),
    fc.array(fc.tuple(fc.constantFrom('status', 'principal', 'remote_user', 'user', 'tenant', ...HOSTILE_KEYS), jsonValue(fc.oneof(fc.integer({ min: 99, max: 1000 }), fc.constantFrom('200', '-', 'alice', 't1')))), { maxLength: 4 }),
  )
  .map(([tk, t, mk, m, pk, p, ik, ip, rest]) => JSON.stringify(own([[tk, t], [mk, m], [pk, p], [ik, ip], ...rest])));

function checkRecord(r: ReturnType<typeof parseJsonLine>, input: string): void {
  if ('error' in r) return;
  if (!Number.isSafeInteger(r.time) || r.time < 0 || r.time > MAX_DATE_MS) throw new Error(`a record's time ${r.time} is not an instant a Date holds, from ${JSON.stringify(input).slice(0, 200)}`);
  if (!r.path.startsWith('/') && r.path !== '*') throw new Error(`a record's path ${JSON.stringify(r.path)} is not a path`);
}

export const logLinesTarget: FuzzTarget = {
  name: 'log-lines',
  arbitrary: fc.oneof(combinedLine, jsonLine, fc.oneof(clfTime, isoTime, epochText)),
  seeds: () => [
    '203.0.113.9 - alice [01/Dec/2026:11:00:00 +0100] "POST /otp/send?to=1&x=2 HTTP/1.1" 429 17 "https://a.example/" "curl/8.5"',
    '2001:db8::1 - - [01/Dec/2026:10:00:00 +0000] "GET / HTTP/2.0" 304 - "-" "a \\"quoted\\" \\x22agent\\x22"',
    '192.0.2.1 - - [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326',
    '{"time":"2026-12-01T10:00:00.250Z","method":"POST","path":"/otp/send?to=1","ip":"192.0.2.1","status":200,"principal":"alice","tenant":"t1"}',
    '{"msec":1764583200.25,"request_method":"GET","request_uri":"/search?q=a","remote_addr":"2001:db8::2","status":"429"}',
    '{"@timestamp":"01/Dec/2026:10:00:00 +0000","method":"GET","url":"http://h.example/a","client_ip":"10.0.0.1"}',
    '2026-12-01 10:00:00+01:00',
  ],
  dictionary: [...HOSTILE_KEYS, ...EDGE_NUMBERS, '"', '\\"', '\\x22', ' ', '[', ']', '{', '}', ':', ',', '-', '+0000', 'Z', 'T', '/', '?', '#', 'http://', 'HTTP/1.1', '"time":', '"ip":', '1e300'],
  run: (input) => {
    const out: unknown[] = [];
    for (const line of input.split('\n')) {
      const c = parseCombinedLine(line);
      checkRecord(c, line);
      const j = parseJsonLine(line);
      checkRecord(j, line);
      const t = parseTimeValue(line);
      if (t !== undefined && (!Number.isSafeInteger(t) || t < 0 || t > MAX_DATE_MS)) throw new Error(`time ${t} from ${JSON.stringify(line).slice(0, 200)} is not an instant a Date holds`);
      // A written year before 1969 is before the epoch whatever the zone: never a time (Date.UTC reads years 0-99 as 1900-1999).
      const year = /^\s*(\d{4})-|\/(\d{4}):/.exec(line);
      const y = year === null ? undefined : Number(year[1] ?? year[2]);
      if (t !== undefined && y !== undefined && y < 1969) throw new Error(`the year ${y} of ${JSON.stringify(line).slice(0, 200)} became ${new Date(t).toISOString()}`);
      out.push(c, j, t);
    }
    return out;
  },
  // The line parsers return `{ error }` for a malformed line; they never throw.
  allowed: () => false,
};
