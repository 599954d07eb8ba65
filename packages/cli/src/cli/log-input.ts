import { open } from 'node:fs/promises';
import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

/**
 * The byte side of reading a log: a file or stdin, gzip or not (told by the
 * magic bytes, whatever the name), cut into lines of bounded length. Nothing
 * here holds more than one chunk and one line at a time.
 */

/** A log that cannot be read: missing file, corrupt gzip, I/O error. The message names the source. */
export class LogInputError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LogInputError';
  }
}

const GZIP_MAGIC = [0x1f, 0x8b] as const;

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Bytes of the log named `source`: `'-'` is `stdin`, anything else a file.
 * Gzip input (files or stdin) is decompressed. Fails with `LogInputError` if
 * the file cannot be opened; a read or gzip error later surfaces from the
 * stream, also as `LogInputError`.
 */
export async function openLogInput(source: string, stdin: Readable = process.stdin, kind = 'log'): Promise<AsyncIterable<Buffer>> {
  let input: Readable;
  if (source === '-') {
    input = stdin;
  } else {
    try {
      const handle = await open(source);
      input = handle.createReadStream();
    } catch (error) {
      throw new LogInputError(`cannot read ${kind} ${source}: ${describe(error)}`, { cause: error });
    }
  }
  return decompressed(input, `${kind} ${source === '-' ? 'stdin' : source}`);
}

/** `input` as is, or through gunzip when its first two bytes are the gzip magic. `name` goes in error messages (`log access.log`). */
async function* decompressed(input: Readable, name: string): AsyncGenerator<Buffer> {
  const chunks = input[Symbol.asyncIterator]() as AsyncIterator<Buffer | string>;
  let head = Buffer.alloc(0);
  try {
    // Read until two bytes are known (a pipe may deliver one byte first).
    while (head.length < GZIP_MAGIC.length) {
      const next = await chunks.next();
      if (next.done === true) break;
      head = Buffer.concat([head, toBuffer(next.value)]);
    }
  } catch (error) {
    throw new LogInputError(`cannot read ${name}: ${describe(error)}`, { cause: error });
  }
  async function* all(): AsyncGenerator<Buffer> {
    if (head.length > 0) yield head;
    for (;;) {
      const next = await chunks.next();
      if (next.done === true) return;
      yield toBuffer(next.value);
    }
  }
  const gzip = head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1];
  const bytes: AsyncIterable<Buffer> = gzip
    ? (pipeline(Readable.from(all(), { objectMode: false }), createGunzip(), () => undefined) as AsyncIterable<Buffer>)
    : all();
  try {
    yield* bytes;
  } catch (error) {
    throw new LogInputError(`cannot read ${name}${gzip ? ' (gzip)' : ''}: ${describe(error)}`, { cause: error });
  } finally {
    if (input !== process.stdin) input.destroy();
  }
}

function toBuffer(chunk: Buffer | string): Buffer {
  return typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
}

/** One line of a log. `text` is undefined when the line was longer than the bound (its bytes were dropped, not kept). */
export interface RawLine {
  /** 1-based line number. */
  readonly number: number;
  readonly text: string | undefined;
}

/** Default longest line kept: longer lines are reported as malformed instead of held in memory. */
export const MAX_LINE_BYTES = 64 * 1024;

/**
 * Splits bytes into lines on `\n` (a `\r` before it is dropped), with a last
 * line without a newline included. A line longer than `maxLineBytes` is
 * yielded with `text: undefined`, and its bytes are skipped as they come, so
 * a file with no newline at all costs `maxLineBytes` of memory, not its size.
 */
export async function* splitLines(bytes: AsyncIterable<Buffer>, maxLineBytes = MAX_LINE_BYTES): AsyncGenerator<RawLine> {
  let parts: Buffer[] = [];
  let length = 0;
  let tooLong = false;
  let number = 0;
  const finish = (): RawLine => {
    number++;
    let text: string | undefined;
    if (!tooLong) {
      const line = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, length);
      const end = line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length;
      text = line.toString('utf8', 0, end);
    }
    parts = [];
    length = 0;
    tooLong = false;
    return { number, text };
  };
  for await (const chunk of bytes) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl;
      if (!tooLong) {
        if (length + end - start > maxLineBytes) {
          tooLong = true;
          parts = [];
          length = 0;
        } else if (end > start) {
          parts.push(chunk.subarray(start, end));
          length += end - start;
        }
      }
      if (nl === -1) break;
      yield finish();
      start = nl + 1;
    }
    // Keep only what the current line needs, not the whole chunk it came in.
    if (parts.length > 0) parts = [Buffer.concat(parts, length)];
  }
  if (length > 0 || tooLong) yield finish();
}
