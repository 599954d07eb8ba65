import type { HeaderRecord } from './forwarded.js';

/** The outcome of a bounded read: the bytes, or `tooLarge` (reading stopped at the bound). */
export type BodyRead = { readonly tooLarge: false; readonly bytes: Uint8Array } | { readonly tooLarge: true };

/** Default `maxBodyBytes`: 100 KiB, as express.json(). */
export const DEFAULT_MAX_BODY_BYTES = 100 * 1024;

const EMPTY = new Uint8Array(0);
const decoder = new TextDecoder('utf-8');

/** The declared `Content-Length`, if it is a valid one. */
export function declaredLength(headers: HeaderRecord): number | undefined {
  const v = headers['content-length'];
  if (typeof v !== 'string' || !/^\d{1,15}$/.test(v)) return undefined;
  return Number(v);
}

/** A JSON media type (`application/json`, `application/*+json`) or none at all. */
export function isJsonOrUntyped(headers: HeaderRecord): boolean {
  const v = headers['content-type'];
  if (v === undefined) return true;
  const type = (typeof v === 'string' ? v : (v[0] ?? '')).split(';')[0]?.trim().toLowerCase() ?? '';
  return type === '' || type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

/**
 * The part of a node:http `IncomingMessage` that {@link readNodeBody} uses.
 * Structural, so that this runtime-neutral entry's declarations need no Node
 * types; an `IncomingMessage` (or Express's request) is one.
 */
export interface NodeBodySource {
  readonly headers: HeaderRecord;
  readonly readableEnded: boolean;
  on(event: 'data', listener: (chunk: Uint8Array | string) => void): unknown;
  on(event: 'end' | 'error' | 'close', listener: () => void): unknown;
  off(event: 'data', listener: (chunk: Uint8Array | string) => void): unknown;
  off(event: 'end' | 'error' | 'close', listener: () => void): unknown;
  pause(): unknown;
}

const encoder = new TextEncoder();

/**
 * Reads a node:http request body up to `max` bytes. Over the bound it stops
 * reading (the rest is never buffered) and answers `tooLarge`; the caller then
 * sends 413 with `Connection: close`. A body cut short by the client resolves
 * with what arrived.
 */
export function readNodeBody(req: NodeBodySource, max: number): Promise<BodyRead> {
  const declared = declaredLength(req.headers);
  if (declared !== undefined && declared > max) return Promise.resolve({ tooLarge: true });
  if (req.readableEnded) return Promise.resolve({ tooLarge: false, bytes: EMPTY });
  return new Promise((resolve) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onEnd);
      req.off('close', onEnd);
    };
    const onData = (chunk: Uint8Array | string): void => {
      const c = typeof chunk === 'string' ? encoder.encode(chunk) : chunk;
      size += c.length;
      if (size > max) {
        cleanup();
        req.pause();
        resolve({ tooLarge: true });
        return;
      }
      chunks.push(c);
    };
    const onEnd = (): void => {
      cleanup();
      resolve({ tooLarge: false, bytes: concat(chunks, size) });
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onEnd);
    req.on('close', onEnd);
  });
}

/** Reads a Web `ReadableStream` body up to `max` bytes; over the bound it cancels the stream. */
export async function readWebBody(body: ReadableStream<Uint8Array> | null, headers: HeaderRecord, max: number): Promise<BodyRead> {
  if (body === null) return { tooLarge: false, bytes: EMPTY };
  const declared = declaredLength(headers);
  if (declared !== undefined && declared > max) {
    await body.cancel().catch(() => undefined);
    return { tooLarge: true };
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return { tooLarge: true };
    }
    chunks.push(value);
  }
  return { tooLarge: false, bytes: concat(chunks, size) };
}

/** Parses a JSON body; `undefined` when it is empty or not JSON (then `body.*` keys do not apply). */
export function parseJsonBody(bytes: Uint8Array): unknown {
  if (bytes.length === 0) return undefined;
  try {
    return JSON.parse(decoder.decode(bytes)) as unknown;
  } catch {
    return undefined;
  }
}
