import type { Readable } from 'node:stream';
import { plural } from '../contract/plural.js';
import { openLogInput, splitLines } from './log-input.js';
import { parseClfTime, parseIsoTime, parseTimeValue, TIME_FIELDS } from './timestamps.js';

/** The most time stamps a trace may hold (they are kept in memory and sorted). */
export const MAX_TRACE_TIMESTAMPS = 5_000_000;

/** How many malformed line numbers a trace keeps for the report. */
const KEEP_MALFORMED = 10;

const BRACKETED_CLF = /\[(\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2}(?:\.\d{1,3})? [+-]\d{4})\]/;

/**
 * The time of one line of a trace, in the first form that fits:
 * - a number alone: milliseconds on the simulation's clock (any origin);
 * - an ISO 8601 date-time alone;
 * - a JSON object with a time in one of `TIME_FIELDS` (ISO, common log
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
    for (const field of TIME_FIELDS) {
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

/**
 * Reads a trace line by line (see `traceLineTime`): a file, gzip or not, or
 * `'-'` for `stdin`. Throws when it cannot be read or holds no time at all.
 */
export async function readTrace(file: string, stdin: Readable = process.stdin): Promise<Trace> {
  const times: number[] = [];
  const malformedLines: number[] = [];
  let malformed = 0;
  let lines = 0;
  for await (const line of splitLines(await openLogInput(file, stdin, 'trace'))) {
    lines = line.number;
    const t = line.text === undefined ? undefined : traceLineTime(line.text);
    if (t === 'skip') continue;
    if (t === undefined) {
      malformed++;
      if (malformedLines.length < KEEP_MALFORMED) malformedLines.push(line.number);
      continue;
    }
    if (times.length >= MAX_TRACE_TIMESTAMPS) throw new Error(`trace ${file}: more than ${MAX_TRACE_TIMESTAMPS} time stamps`);
    times.push(t);
  }
  if (times.length === 0) {
    throw new Error(
      `trace ${file}: no time stamp in ${plural(lines, 'line')}` + (malformed > 0 ? ` (malformed: ${plural(malformed, 'line', { word: true })} ${malformedLines.join(', ')}${malformed > malformedLines.length ? ', ...' : ''})` : ''),
    );
  }
  times.sort((a, b) => a - b);
  return { file, times, lines, malformed, malformedLines };
}
