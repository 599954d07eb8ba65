import type { Readable } from 'node:stream';
import { MAX_LINE_BYTES, openLogInput, splitLines } from './log-input.js';
import { parseClfTime, parseTimeValue, TIME_FIELDS } from './timestamps.js';

export { LogInputError } from './log-input.js';

/**
 * Access logs for `ratecontract replay`: nginx / Apache `combined` (and
 * `common`) lines, or JSON lines, from a file, gzip or stdin, streamed in
 * timestamp order with bounded memory. Malformed lines are counted, with
 * their line numbers and a reason, and never stop the read.
 */

/** The log formats `--format` takes. `auto` decides from the first line that is not blank. */
export type LogFormat = 'combined' | 'json' | 'auto';

/** One request of a log. */
export interface LogRecord {
  /** 1-based line number in the (decompressed) log. */
  readonly line: number;
  /** Epoch ms. Combined logs have whole seconds. In a `readLog` stream, never below the previous record's. */
  readonly time: number;
  readonly method: string;
  /** The request target's path, without the query. */
  readonly path: string;
  /** The query string without `?`, `''` when there is none. */
  readonly query: string;
  /** The client address as logged (`$remote_addr`, Apache `%h`). */
  readonly ip: string;
  readonly status?: number;
  /** The authenticated user: `$remote_user` of a combined log, `principal` of a JSON line. */
  readonly principal?: string;
  /** JSON lines only. */
  readonly tenant?: string;
}

/** Why a line was not a record. */
export interface MalformedLine {
  readonly line: number;
  readonly reason: string;
}

/** A line's parse: a record without its line number, or the reason it is malformed. */
export type LineParse = Omit<LogRecord, 'line'> | { readonly error: string };

// $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent ["$http_referer" "$http_user_agent"]
// Quoted fields allow nginx's \xHH and Apache's \" escapes.
const QUOTED = String.raw`"((?:[^"\\]|\\.)*)"`;
const COMBINED = new RegExp(String.raw`^(\S+) (\S+) (\S+) \[([^\]]+)\] ${QUOTED} (\d{3}) (\S+)(?: ${QUOTED} ${QUOTED})?(?: .*)?$`);

const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/** A request target as path and query; absolute-form targets (through a proxy) keep their path. Undefined when it is neither. */
function splitTarget(target: string): { path: string; query: string } | undefined {
  let t = target.replace(ORIGIN, '');
  if (t === '' && t !== target) t = '/';
  if (!t.startsWith('/') && t !== '*') return undefined;
  t = t.replace(/#.*$/, '');
  const q = t.indexOf('?');
  return q === -1 ? { path: t, query: '' } : { path: t.slice(0, q), query: t.slice(q + 1) };
}

/** One `combined` or `common` log line. */
export function parseCombinedLine(text: string): LineParse {
  const m = COMBINED.exec(text);
  if (m === null) return { error: 'not a common or combined log line' };
  const [, ip, , user, timeText, request, statusText] = m as unknown as [string, string, string, string, string, string, string];
  const time = parseClfTime(timeText);
  if (time === undefined) return { error: `bad time [${timeText}]` };
  const parts = request.split(' ');
  if (parts.length < 2 || parts.length > 3 || !/^[A-Z][A-Z0-9_-]*$/.test(parts[0] as string)) {
    return { error: `no request line in "${request.length > 40 ? request.slice(0, 40) + '...' : request}"` };
  }
  const target = splitTarget(parts[1] as string);
  if (target === undefined) return { error: `bad request target ${JSON.stringify(parts[1])}` };
  return {
    time,
    method: parts[0] as string,
    ...target,
    ip,
    status: Number(statusText),
    ...(user !== '-' && user !== '' ? { principal: user } : {}),
  };
}

/** JSON fields read for each record field, first present wins. */
export const JSON_FIELDS: Readonly<Record<'time' | 'method' | 'path' | 'ip' | 'status' | 'principal' | 'tenant', readonly string[]>> = {
  time: TIME_FIELDS,
  method: ['method', 'request_method'],
  path: ['path', 'uri', 'request_uri', 'url'],
  ip: ['ip', 'remote_addr', 'client_ip'],
  status: ['status'],
  principal: ['principal', 'remote_user', 'user'],
  tenant: ['tenant'],
};

function field(record: Record<string, unknown>, names: readonly string[]): unknown {
  for (const name of names) if (Object.hasOwn(record, name)) return record[name];
  return undefined;
}

function optionalString(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '' && value !== '-') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/** One JSON line: an object with time, method, path and ip, and optional status, principal and tenant. */
export function parseJsonLine(text: string): LineParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: 'not valid JSON' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { error: 'not a JSON object' };
  const record = value as Record<string, unknown>;
  const rawTime = field(record, JSON_FIELDS.time);
  if (rawTime === undefined) return { error: 'no time field' };
  const time = parseTimeValue(rawTime);
  if (time === undefined) return { error: `bad time ${JSON.stringify(rawTime)}` };
  const method = field(record, JSON_FIELDS.method);
  if (typeof method !== 'string' || !/^[A-Za-z][A-Za-z0-9_-]*$/.test(method)) return { error: method === undefined ? 'no method field' : `bad method ${JSON.stringify(method)}` };
  const rawPath = field(record, JSON_FIELDS.path);
  if (typeof rawPath !== 'string') return { error: rawPath === undefined ? 'no path field' : `bad path ${JSON.stringify(rawPath)}` };
  const target = splitTarget(rawPath);
  if (target === undefined) return { error: `bad path ${JSON.stringify(rawPath)}` };
  const ip = field(record, JSON_FIELDS.ip);
  if (typeof ip !== 'string' || ip === '' || /\s/.test(ip)) return { error: ip === undefined ? 'no ip field' : `bad ip ${JSON.stringify(ip)}` };
  const rawStatus = field(record, JSON_FIELDS.status);
  let status: number | undefined;
  if (rawStatus !== undefined && rawStatus !== null && rawStatus !== '-') {
    status = typeof rawStatus === 'string' && /^\d{3}$/.test(rawStatus) ? Number(rawStatus) : typeof rawStatus === 'number' ? rawStatus : NaN;
    if (!Number.isInteger(status) || status < 100 || status > 999) return { error: `bad status ${JSON.stringify(rawStatus)}` };
  }
  const principal = optionalString(field(record, JSON_FIELDS.principal));
  const tenant = optionalString(field(record, JSON_FIELDS.tenant));
  return {
    time,
    method: method.toUpperCase(),
    ...target,
    ip,
    ...(status !== undefined ? { status } : {}),
    ...(principal !== undefined ? { principal } : {}),
    ...(tenant !== undefined ? { tenant } : {}),
  };
}

/** Options of `readLog`. */
export interface ReadLogOptions {
  /** Default `auto`. */
  readonly format?: LogFormat;
  /**
   * Records may be out of order by up to this much (a log line is written
   * when the response ends, not when the request arrived): they are held
   * and released in time order once the log has moved this far past them.
   * A record later than that is moved up to the last released time and
   * counted in `late`. Default 5000 ms. The buffer holds the records of
   * this span, so memory is bounded by the log's rate, not its length.
   */
  readonly reorderMs?: number;
  /** Default 64 KiB; longer lines are malformed. */
  readonly maxLineBytes?: number;
  /** How many malformed lines keep their number and reason. Default 100. */
  readonly keepMalformed?: number;
  /** The stream read for `'-'`. Default `process.stdin`. */
  readonly stdin?: Readable;
}

/** What a read saw. Complete once the iteration ends; live before. */
export interface LogStats {
  /** The format used: the one asked for, or detected (`undefined` until a line decides it). */
  format: 'combined' | 'json' | undefined;
  lines: number;
  records: number;
  /** Blank lines, skipped. */
  blank: number;
  malformed: number;
  /** The first `keepMalformed` malformed lines. */
  readonly malformedLines: MalformedLine[];
  /** Records further out of order than `reorderMs`, moved up in time. */
  late: number;
  firstTime: number | undefined;
  lastTime: number | undefined;
}

/** A min-heap of records by (time, line). */
class RecordHeap {
  readonly #items: LogRecord[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): LogRecord | undefined {
    return this.#items[0];
  }

  #less(a: LogRecord, b: LogRecord): boolean {
    return a.time < b.time || (a.time === b.time && a.line < b.line);
  }

  push(r: LogRecord): void {
    const a = this.#items;
    a.push(r);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(a[i] as LogRecord, a[parent] as LogRecord)) break;
      [a[i], a[parent]] = [a[parent] as LogRecord, a[i] as LogRecord];
      i = parent;
    }
  }

  pop(): LogRecord | undefined {
    const a = this.#items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.#less(a[l] as LogRecord, a[m] as LogRecord)) m = l;
        if (r < a.length && this.#less(a[r] as LogRecord, a[m] as LogRecord)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m] as LogRecord, a[i] as LogRecord];
        i = m;
      }
    }
    return top;
  }
}

/** A log being read: iterate `records` once; `stats` fills in as it goes. */
export interface LogRead {
  readonly records: AsyncIterable<LogRecord>;
  readonly stats: LogStats;
}

/**
 * Reads the log `source` (a file, or `'-'` for stdin; gzip or not) as records
 * in time order. Opening fails with `LogInputError`; so does a read or gzip
 * error during the iteration. A malformed line never does.
 */
export function readLog(source: string, options: ReadLogOptions = {}): LogRead {
  const format = options.format ?? 'auto';
  const reorderMs = options.reorderMs ?? 5000;
  const keep = options.keepMalformed ?? 100;
  const stats: LogStats = {
    format: format === 'auto' ? undefined : format,
    lines: 0,
    records: 0,
    blank: 0,
    malformed: 0,
    malformedLines: [],
    late: 0,
    firstTime: undefined,
    lastTime: undefined,
  };
  const malformed = (line: number, reason: string): void => {
    stats.malformed++;
    if (stats.malformedLines.length < keep) stats.malformedLines.push({ line, reason });
  };
  async function* records(): AsyncGenerator<LogRecord> {
    const bytes = await openLogInput(source, options.stdin);
    const heap = new RecordHeap();
    let newest = -Infinity; // the latest time read
    let released = -Infinity; // the time of the last record given out
    const release = (r: LogRecord): LogRecord => {
      released = r.time;
      stats.records++;
      stats.firstTime ??= r.time;
      stats.lastTime = r.time;
      return r;
    };
    for await (const raw of splitLines(bytes, options.maxLineBytes ?? MAX_LINE_BYTES)) {
      stats.lines = raw.number;
      if (raw.text === undefined) {
        malformed(raw.number, `longer than ${options.maxLineBytes ?? MAX_LINE_BYTES} bytes`);
        continue;
      }
      const text = raw.text.trim();
      if (text === '') {
        stats.blank++;
        continue;
      }
      stats.format ??= text.startsWith('{') ? 'json' : 'combined';
      const parsed = stats.format === 'json' ? parseJsonLine(text) : parseCombinedLine(text);
      if ('error' in parsed) {
        malformed(raw.number, parsed.error);
        continue;
      }
      let record: LogRecord = { line: raw.number, ...parsed };
      if (record.time < released) {
        stats.late++;
        record = { ...record, time: released };
      }
      heap.push(record);
      if (record.time > newest) newest = record.time;
      while (heap.size > 0 && (heap.peek() as LogRecord).time <= newest - reorderMs) yield release(heap.pop() as LogRecord);
    }
    while (heap.size > 0) yield release(heap.pop() as LogRecord);
  }
  return { records: records(), stats };
}
