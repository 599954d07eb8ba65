/**
 * Exact bytes over a real socket, for what an HTTP client library would not
 * send (smuggling shapes, obs-fold, bare LF) or would hide (1xx answers, a
 * body after HEAD or 304, the order of repeated fields).
 */
import { connect, type Socket } from 'node:net';

export interface RawResult {
  /** Everything the server sent, as latin1 text. */
  readonly text: string;
  /** Whether the server closed (or reset) the connection before `budgetMs`. */
  readonly closed: boolean;
  /** Milliseconds from the first write to the end (close, `until`, or the budget). */
  readonly elapsedMs: number;
}

export interface RawOptions {
  /** Resolve as soon as this holds for the text so far (else at close or the budget). */
  readonly until?: (text: string) => boolean;
  /** Bound on the whole exchange; default 5 s. */
  readonly budgetMs?: number;
  /** Called with the socket once connected, instead of writing `bytes` at once (to trickle, or to wait for a 100). */
  readonly drive?: (socket: Socket, received: () => string) => void;
}

/** Connects to `url`'s host and port, writes `bytes`, and collects the answer. */
export function rawExchange(url: string, bytes: string | Buffer, options: RawOptions = {}): Promise<RawResult> {
  const u = new URL(url);
  const budget = options.budgetMs ?? 5_000;
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname);
    let text = '';
    let started = 0;
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed, elapsedMs: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false), budget);
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (options.until?.(text) === true) finish(false);
    });
    socket.on('connect', () => {
      started = Date.now();
      if (options.drive !== undefined) options.drive(socket, () => text);
      else socket.write(bytes);
    });
  });
}

export interface ParsedHead {
  readonly status: number;
  /** Field lines in order, names in lower case. */
  readonly fields: ReadonlyArray<readonly [string, string]>;
  /** What follows the blank line. */
  readonly rest: string;
}

/** Splits the first answer head off `text`: the status, the field lines in order, and the rest. */
export function parseHead(text: string): ParsedHead {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no complete answer head in ${JSON.stringify(text.slice(0, 300))}`);
  const lines = text.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? NaN);
  const fields = lines.slice(1).map((l): [string, string] => {
    const i = l.indexOf(':');
    return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()];
  });
  return { status, fields, rest: text.slice(end + 4) };
}

/** The values of field `name` in a parsed head, in order. */
export function values(head: ParsedHead, name: string): string[] {
  return head.fields.filter(([n]) => n === name).map(([, v]) => v);
}
