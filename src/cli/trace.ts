import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { parseClfTime, parseIsoTime, parseTimeValue } from './timestamps.js';

/** Field names whose value a JSON line's time is read from, first match wins. */
export const JSON_TIME_FIELDS: readonly string[] = ['time', 'timestamp', 'ts', '@timestamp', 'time_local', 'time_iso8601', 'date'];

/** The most time stamps a trace may hold (they are kept in memory and sorted). */
export const MAX_TRACE_TIMESTAMPS = 5_000_000;

/** How many malformed line numbers a trace keeps for the report. */
const KEEP_MALFORMED = 10;

const BRACKETED_CLF = /\[(\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2}(?:\.\d{1,3})? [+-]\d{4})\]/;

/**
 * The time of one line of a trace, in the first form that fits:
 * - a number alone: milliseconds on the simulation's clock (any origin);
 * - an ISO 8601 date-time alone;
 * - a JSON object with a time in one of `JSON_TIME_FIELDS` (ISO, common log
 *   time, or epoch seconds / milliseconds);
 * - a line holding a bracketed common log time, `[10/Oct/2000:13:55:36 -0700]`
 *   (nginx and Apache `combined` and `common`).
 *
 * `'skip'` for a blank line or a `#` comment; `undefined` when nothing fits.
 */
export function traceLineTime(line: string): number | 'skip' | undefined {
  const text = line.trim();
  if (text === '' || text.startsWith('#')) return 'skip';
  if (/^\d+(?:\.\d+)?$/.test(text)) return Math.floor(Number(text));
  if (text.startsWith('{')) {
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch {
      return undefined;
    }
    if (record === null || typeof record !== 'object' || Array.isArray(record)) return undefined;
    for (const field of JSON_TIME_FIELDS) {
      if (Object.hasOwn(record, field)) return parseTimeValue((record as Record<string, unknown>)[field]);
    }
    return undefined;
  }
  const iso = parseIsoTime(text);
  if (iso !== undefined) return iso;
  const clf = BRACKETED_CLF.exec(text);
  return clf === null ? undefined : parseClfTime(clf[1] as string);
}

/** A trace read from a file. */
export interface Trace {
  readonly file: string;
  /** Time stamps as read, ascending (a log one second apart at best is sorted, not trusted). */
  readonly times: readonly number[];
  /** Lines read, blank and comment lines included. */
  readonly lines: number;
  /** Lines with no time in any known form. */
  readonly malformed: number;
  /** The first few of those, 1-based. */
  readonly malformedLines: readonly number[];
}

/** Reads a trace file line by line (see `traceLineTime`). Throws when the file cannot be read or holds no time at all. */
export async function readTrace(file: string): Promise<Trace> {
  const times: number[] = [];
  const malformedLines: number[] = [];
  let malformed = 0;
  let lines = 0;
  let handle;
  try {
    handle = await open(file);
  } catch (error) {
    throw new Error(`cannot read trace ${file}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const input = handle.createReadStream({ encoding: 'utf8' });
  const reader = createInterface({ input, crlfDelay: Infinity });
  try {
    for await (const line of reader) {
      lines++;
      const t = traceLineTime(line);
      if (t === 'skip') continue;
      if (t === undefined) {
        malformed++;
        if (malformedLines.length < KEEP_MALFORMED) malformedLines.push(lines);
        continue;
      }
      if (times.length >= MAX_TRACE_TIMESTAMPS) throw new Error(`trace ${file}: more than ${MAX_TRACE_TIMESTAMPS} time stamps`);
      times.push(t);
    }
  } catch (error) {
    if (error instanceof Error && 'code' in error && typeof error.code === 'string' && error.code.startsWith('E')) {
      throw new Error(`cannot read trace ${file}: ${error.message}`, { cause: error });
    }
    throw error;
  } finally {
    reader.close();
    input.destroy();
    await handle.close().catch(() => undefined);
  }
  if (times.length === 0) {
    throw new Error(
      `trace ${file}: no time stamp in ${lines} lines` + (malformed > 0 ? ` (malformed: line ${malformedLines.join(', ')}${malformed > malformedLines.length ? ', ...' : ''})` : ''),
    );
  }
  times.sort((a, b) => a - b);
  return { file, times, lines, malformed, malformedLines };
}
