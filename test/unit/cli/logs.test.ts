import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitLines } from '../../../packages/cli/src/cli/log-input.js';
import { LogInputError, parseCombinedLine, parseJsonLine, readLog, type LogRecord, type ReadLogOptions } from '../../../packages/cli/src/cli/logs.js';
import { fcBudget } from '../../helpers/fc-budget.js';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ratecontract-logs-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function collect(source: string, options: ReadLogOptions = {}): Promise<{ records: LogRecord[]; stats: ReturnType<typeof readLog>['stats'] }> {
  const read = readLog(source, options);
  const records: LogRecord[] = [];
  for await (const r of read.records) records.push(r);
  return { records, stats: read.stats };
}

async function file(name: string, content: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

const T0 = Date.UTC(2026, 11, 1, 10, 0, 0);
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A combined log line at epoch `ms` (whole seconds are logged). */
function clfLine(ms: number, path = '/', ip = '192.0.2.1'): string {
  const d = new Date(ms);
  const pad = (n: number): string => String(n).padStart(2, '0');
  const time = `${pad(d.getUTCDate())}/${MONTHS[d.getUTCMonth()] ?? ''}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
  return `${ip} - - [${time}] "GET ${path} HTTP/1.1" 200 1 "-" "t"`;
}

describe('parseCombinedLine', () => {
  it('reads nginx and Apache combined lines', () => {
    expect(parseCombinedLine('203.0.113.9 - alice [01/Dec/2026:11:00:00 +0100] "POST /otp/send?to=1&x=2 HTTP/1.1" 429 17 "https://a.example/" "curl/8.5"')).toEqual({
      time: T0,
      method: 'POST',
      path: '/otp/send',
      query: 'to=1&x=2',
      ip: '203.0.113.9',
      status: 429,
      principal: 'alice',
    });
    // Escaped quotes in the user agent (Apache \", nginx \x22), IPv6, no user, a size of "-".
    expect(parseCombinedLine('2001:db8::1 - - [01/Dec/2026:10:00:00 +0000] "GET / HTTP/2.0" 304 - "-" "a \\"quoted\\" \\x22agent\\x22"')).toEqual({
      time: T0, method: 'GET', path: '/', query: '', ip: '2001:db8::1', status: 304,
    });
  });

  it('reads common lines (no referer or user agent) and extra fields after the user agent', () => {
    expect(parseCombinedLine('192.0.2.1 - - [01/Dec/2026:10:00:00 -0000] "GET /a HTTP/1.0" 200 5')).toMatchObject({ path: '/a', time: T0 });
    expect(parseCombinedLine('192.0.2.1 - - [01/Dec/2026:10:00:00 +0000] "GET /a HTTP/1.1" 200 5 "-" "ua" 0.003 "upstream"')).toMatchObject({ path: '/a' });
    // An absolute-form target through a proxy keeps its path.
    expect(parseCombinedLine('192.0.2.1 - - [01/Dec/2026:10:00:00 +0000] "GET http://h.example:8080/p?q=1 HTTP/1.1" 200 5')).toMatchObject({ path: '/p', query: 'q=1' });
  });

  it.each([
    ['', 'not a common or combined log line'],
    ['hello world', 'not a common or combined log line'],
    ['192.0.2.1 - - [01/Dec/2026:10:00:00] "GET / HTTP/1.1" 200 5', 'bad time [01/Dec/2026:10:00:00]'],
    ['192.0.2.1 - - [32/Dec/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 5', 'bad time'],
    ['192.0.2.1 - - [01/Foo/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 5', 'bad time'],
    ['192.0.2.1 - - [01/Dec/2026:10:00:00 +0000] "-" 400 0 "-" "-"', 'no request line in "-"'],
    ['192.0.2.1 - - [01/Dec/2026:10:00:00 +0000] "\\x16\\x03\\x01" 400 0', 'no request line'],
    ['192.0.2.1 - - [01/Dec/2026:10:00:00 +0000] "GET nowhere HTTP/1.1" 200 5', 'bad request target "nowhere"'],
    ['192.0.2.1 - - [01/Dec/2026:10:00:00 +0000] "GET / HTTP/1.1" 2000 5', 'not a common or combined log line'],
  ])('%j is malformed: %s', (line, reason) => {
    const parsed = parseCombinedLine(line);
    expect('error' in parsed && parsed.error).toContain(reason);
  });
});

describe('parseJsonLine', () => {
  it('reads time, method, path, ip and the optional status, principal and tenant', () => {
    expect(parseJsonLine('{"time":"2026-12-01T10:00:00Z","method":"post","path":"/otp?to=1","ip":"198.51.100.7","status":201,"principal":"u1","tenant":"t9"}')).toEqual({
      time: T0, method: 'POST', path: '/otp', query: 'to=1', ip: '198.51.100.7', status: 201, principal: 'u1', tenant: 't9',
    });
    // nginx-style names, epoch seconds with a fraction, status as a string, "-" as absent.
    expect(parseJsonLine(`{"msec":${T0 / 1000 + 0.25},"request_method":"GET","request_uri":"/","remote_addr":"192.0.2.3","status":"404","remote_user":"-"}`)).toEqual({
      time: T0 + 250, method: 'GET', path: '/', query: '', ip: '192.0.2.3', status: 404,
    });
    expect(parseJsonLine(`{"time":${T0},"method":"GET","path":"/","ip":"::1"}`)).toEqual({ time: T0, method: 'GET', path: '/', query: '', ip: '::1' });
  });

  it.each([
    ['{"time":', 'not valid JSON'],
    ['[1,2]', 'not a JSON object'],
    ['{"method":"GET","path":"/","ip":"1.2.3.4"}', 'no time field'],
    ['{"time":"yesterday","method":"GET","path":"/","ip":"1.2.3.4"}', 'bad time "yesterday"'],
    ['{"time":-5,"method":"GET","path":"/","ip":"1.2.3.4"}', 'bad time -5'],
    ['{"time":1,"path":"/","ip":"1.2.3.4"}', 'no method field'],
    ['{"time":1,"method":"G T","path":"/","ip":"1.2.3.4"}', 'bad method'],
    ['{"time":1,"method":"GET","ip":"1.2.3.4"}', 'no path field'],
    ['{"time":1,"method":"GET","path":"x","ip":"1.2.3.4"}', 'bad path "x"'],
    ['{"time":1,"method":"GET","path":"/"}', 'no ip field'],
    ['{"time":1,"method":"GET","path":"/","ip":""}', 'bad ip'],
    ['{"time":1,"method":"GET","path":"/","ip":"1.2.3.4","status":"ok"}', 'bad status "ok"'],
    ['{"time":1,"method":"GET","path":"/","ip":"1.2.3.4","status":99}', 'bad status 99'],
  ])('%s is malformed: %s', (line, reason) => {
    const parsed = parseJsonLine(line);
    expect('error' in parsed && parsed.error).toContain(reason);
  });
});

describe('readLog', () => {
  const combined = (s: number, path = '/', ip = '192.0.2.1'): string => clfLine(T0 + s * 1000, path, ip);

  it('detects combined logs, counts malformed and blank lines with numbers and reasons, and handles CRLF and a last line without newline', async () => {
    const text = [combined(0), '', 'garbage', combined(1, '/b'), '{"time":1}', combined(2, '/c')].join('\r\n');
    const { records, stats } = await collect(await file('mixed.log', text));
    expect(records.map((r) => [r.line, r.path, r.time])).toEqual([
      [1, '/', T0],
      [4, '/b', T0 + 1000],
      [6, '/c', T0 + 2000],
    ]);
    expect(stats).toMatchObject({ format: 'combined', lines: 6, records: 3, blank: 1, malformed: 2, late: 0, firstTime: T0, lastTime: T0 + 2000 });
    expect(stats.malformedLines).toEqual([
      { line: 3, reason: 'not a common or combined log line' },
      { line: 5, reason: 'not a common or combined log line' },
    ]);
  });

  it('detects JSON lines from the first line that is not blank; --format forces one', async () => {
    const json = `\n{"time":${T0},"method":"GET","path":"/","ip":"a"}\n${combined(0)}\n`;
    const auto = await collect(await file('j.log', json));
    expect(auto.stats).toMatchObject({ format: 'json', records: 1, malformed: 1 });
    expect(auto.stats.malformedLines).toEqual([{ line: 3, reason: 'not valid JSON' }]);
    const forced = await collect(await file('j2.log', json), { format: 'combined' });
    expect(forced.stats).toMatchObject({ format: 'combined', records: 1, malformed: 1 });
    expect(forced.records[0]?.line).toBe(3);
  });

  it('reads gzip files, whatever their name, and gzip or plain stdin', async () => {
    const text = [combined(0), combined(1), 'bad', combined(2)].join('\n') + '\n';
    const plain = await collect(await file('p.log', text));
    const gz = await collect(await file('p.log.gz', gzipSync(Buffer.from(text))));
    const misnamed = await collect(await file('p.txt', gzipSync(Buffer.from(text))));
    expect(gz.records).toEqual(plain.records);
    expect(misnamed.records).toEqual(plain.records);
    expect(gz.stats.malformedLines).toEqual([{ line: 3, reason: 'not a common or combined log line' }]);
    // stdin arriving one byte at a time, so that the gzip magic is split.
    const bytes = gzipSync(Buffer.from(text));
    const stdin = Readable.from((function* () {
      for (const b of bytes) yield Buffer.from([b]);
    })());
    expect((await collect('-', { stdin })).records).toEqual(plain.records);
    expect((await collect('-', { stdin: Readable.from([Buffer.from(text)]) })).records).toEqual(plain.records);
    expect((await collect('-', { stdin: Readable.from([]) })).stats).toMatchObject({ lines: 0, records: 0 });
  });

  it('fails with LogInputError naming the source for a missing file and for corrupt gzip', async () => {
    const missing = join(dir, 'none.log');
    await expect(collect(missing)).rejects.toThrow(LogInputError);
    await expect(collect(missing)).rejects.toThrow(`cannot read log ${missing}`);
    const good = gzipSync(Buffer.from(combined(0).repeat(1) + '\n' + combined(1) + '\n'));
    const corrupt = Buffer.concat([good.subarray(0, 12), Buffer.from('this is not deflate data at all, sorry'), good.subarray(12)]);
    const corruptFile = await file('corrupt.gz', corrupt);
    await expect(collect(corruptFile)).rejects.toThrow(`cannot read log ${corruptFile} (gzip)`);
    const truncated = await file('truncated.gz', good.subarray(0, good.length - 6));
    await expect(collect(truncated)).rejects.toThrow(LogInputError);
  });

  it('a line longer than the bound is malformed and costs no more than the bound', async () => {
    const long = 'x'.repeat(300_000);
    const { records, stats } = await collect(await file('long.log', `${combined(0)}\n${long}\n${combined(1)}\n${long}`), { maxLineBytes: 1000 });
    expect(records.map((r) => r.line)).toEqual([1, 3]);
    expect(stats.malformedLines).toEqual([
      { line: 2, reason: 'longer than 1000 bytes' },
      { line: 4, reason: 'longer than 1000 bytes' },
    ]);
  });

  it('keeps the first malformed line numbers only, and counts them all', async () => {
    const { stats } = await collect(await file('bad.log', 'x\n'.repeat(500)), { keepMalformed: 3 });
    expect(stats.malformed).toBe(500);
    expect(stats.malformedLines.map((m) => m.line)).toEqual([1, 2, 3]);
  });

  it('gives records in time order: disorder within reorderMs is sorted, later than that is moved up and counted', async () => {
    const seconds = [0, 3, 1, 2, 10, 4, 11, 20, 12];
    const { records, stats } = await collect(await file('order.log', seconds.map((s, i) => combined(s, `/${i}`)).join('\n')), { reorderMs: 5000 });
    // Every record is less than 5 s out of order when it is read, so the buffer sorts them all.
    expect(records.map((r) => (r.time - T0) / 1000)).toEqual([0, 1, 2, 3, 4, 10, 11, 12, 20].map((s) => s));
    expect(stats.late).toBe(0);
    const strict = await collect(await file('order0.log', seconds.map((s, i) => combined(s, `/${i}`)).join('\n')), { reorderMs: 0 });
    expect(strict.records.map((r) => (r.time - T0) / 1000)).toEqual([0, 3, 3, 3, 10, 10, 11, 20, 20]);
    expect(strict.stats.late).toBe(4);
  });

  it('property: the records come out in time order, each line once, for any disorder', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 30 }), { maxLength: 80 }), fc.integer({ min: 0, max: 40_000 }), async (seconds, reorderMs) => {
        const stdin = Readable.from([Buffer.from(seconds.map((s) => combined(s)).join('\n'))]);
        const { records, stats } = await collect('-', { stdin, reorderMs });
        expect(records.map((r) => r.line).sort((a, b) => a - b)).toEqual(seconds.map((_, i) => i + 1));
        records.forEach((r, i) => {
          if (i > 0) expect(r.time).toBeGreaterThanOrEqual((records[i - 1] as LogRecord).time);
          // A record is never moved earlier, and only a late one is moved at all.
          expect(r.time).toBeGreaterThanOrEqual(T0 + (seconds[r.line - 1] as number) * 1000);
        });
        const moved = records.filter((r) => r.time !== T0 + (seconds[r.line - 1] as number) * 1000).length;
        expect(moved).toBe(stats.late);
        if (reorderMs >= 30_000) expect(stats.late).toBe(0);
      }),
      fcBudget({ runs: 100, ms: 4000 }),
    );
  });
});

describe('splitLines', () => {
  it('splits across chunk boundaries, CR before LF included', async () => {
    const chunks = ['ab', 'c\r', '\nd', 'e\n\nf'].map((s) => Buffer.from(s));
    const lines: Array<string | undefined> = [];
    for await (const l of splitLines(Readable.from(chunks))) lines.push(l.text);
    expect(lines).toEqual(['abc', 'de', '', 'f']);
  });

  it('does not split a multi-byte character cut by a chunk boundary', async () => {
    const bytes = Buffer.from('é€\n');
    const lines: Array<string | undefined> = [];
    for await (const l of splitLines(Readable.from([...bytes].map((b) => Buffer.from([b]))))) lines.push(l.text);
    expect(lines).toEqual(['é€']);
  });
});

describe('readLog memory', () => {
  it('a 1,000,000-line log needs no more heap than a 10,000-line one with the same keys', async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    expect(gc, 'vitest runs with --expose-gc').toBeTypeOf('function');
    const peak = async (lines: number): Promise<number> => {
      (gc as () => void)();
      const base = process.memoryUsage().heapUsed;
      let most = 0;
      // 100 clients, 10 requests a second, generated lazily: the input itself holds nothing.
      const stdin = Readable.from((function* () {
        const batch: string[] = [];
        for (let i = 0; i < lines; i++) {
          batch.push(clfLine(T0 + Math.floor(i / 10) * 1000, `/p${i % 7}`, `192.0.2.${i % 100}`));
          if (batch.length === 1000) {
            yield Buffer.from(batch.join('\n') + '\n');
            batch.length = 0;
          }
        }
        if (batch.length > 0) yield Buffer.from(batch.join('\n') + '\n');
      })());
      const read = readLog('-', { stdin });
      let n = 0;
      for await (const r of read.records) {
        if (r.line < 0) throw new Error('unreachable');
        if (++n % 100_000 === 0) {
          (gc as () => void)();
          most = Math.max(most, process.memoryUsage().heapUsed - base);
        }
      }
      (gc as () => void)();
      most = Math.max(most, process.memoryUsage().heapUsed - base);
      expect(read.stats.records).toBe(lines);
      return most;
    };
    const small = await peak(10_000);
    const large = await peak(1_000_000);
    // The reorder buffer holds 5 s of log, 50 records; everything else is per line.
    expect(large - small).toBeLessThan(4 * 1024 * 1024);
  });
});
