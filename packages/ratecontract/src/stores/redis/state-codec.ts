import type { AlgorithmName } from '../../algorithms/types.js';
import type { ConcurrencyState, Lease } from '../../algorithms/concurrency.js';
import type { SubWindowState } from '../../algorithms/sub-windows.js';

/**
 * The stored state format (format 2, key tag `v2`; docs/redis.md, "State
 * values"), the TypeScript twin of what the Lua scripts pack with
 * `struct.pack`: every number is a little-endian IEEE double (8 bytes), so
 * every integer below 2^53 round-trips exactly.
 *
 * | algorithm | value |
 * | --- | --- |
 * | fixed-window | w, c (16 bytes) |
 * | sliding-window | w, c, p (24 bytes) |
 * | sliding-window, precision k >= 2 | w, n0 .. nk ((k + 2) x 8 bytes; under its own key, `<name>:sliding-window/k`) |
 * | token-bucket | u, t (16 bytes) |
 * | leaky-bucket | l, t (16 bytes) |
 * | gcra | t, f (16 bytes) |
 * | sliding-log | t0, c0, t1, c1, ... (16 bytes per entry) |
 * | concurrency | per lease: exp, cost (doubles), the id's byte length (uint32 LE), the id's UTF-8 bytes |
 *
 * For tools and tests: the store itself never reads a state in TypeScript.
 */

/** The field names of the fixed-size states, in stored order. */
const FIELDS = {
  'fixed-window': ['w', 'c'],
  'sliding-window': ['w', 'c', 'p'],
  'token-bucket': ['u', 't'],
  'leaky-bucket': ['l', 't'],
  gcra: ['t', 'f'],
} as const satisfies Partial<Record<AlgorithmName, readonly string[]>>;

const LEASE_HEAD = 20;

function badState(algorithm: AlgorithmName, bytes: number, why: string): Error {
  return new Error(`redis state: a ${bytes}-byte value is not a ${algorithm} state of format 2 (${why})`);
}

/** Reads a stored value (as the bytes GET returns) into the TypeScript algorithm's state shape. */
export function decodeState(algorithm: AlgorithmName, raw: Uint8Array): unknown {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const n = raw.byteLength;
  switch (algorithm) {
    case 'sliding-log': {
      if (n === 0 || n % 16 !== 0) throw badState(algorithm, n, 'expected a multiple of 16 bytes');
      const out = new Array<number>(n / 8);
      for (let i = 0; i < out.length; i++) out[i] = view.getFloat64(i * 8, true);
      return out;
    }
    case 'concurrency': {
      const out: Lease[] = [];
      const text = new TextDecoder('utf-8', { fatal: false });
      let pos = 0;
      while (pos < n) {
        if (n - pos < LEASE_HEAD) throw badState(algorithm, n, `a lease cut short at byte ${pos}`);
        const exp = view.getFloat64(pos, true);
        const cost = view.getFloat64(pos + 8, true);
        const len = view.getUint32(pos + 16, true);
        const start = pos + LEASE_HEAD;
        if (start + len > n) throw badState(algorithm, n, `a lease id of ${len} bytes past the end`);
        out.push({ exp, cost, id: text.decode(raw.subarray(start, start + len)) });
        pos = start + len;
      }
      if (out.length === 0) throw badState(algorithm, n, 'no lease');
      return out satisfies ConcurrencyState;
    }
    case 'sliding-window':
      if (n !== 24) {
        // Precision k >= 2: w and k + 1 counts.
        if (n < 32 || n % 8 !== 0) throw badState(algorithm, n, 'expected 24 bytes, or (k + 2) x 8 for precision k');
        const counts = new Array<number>(n / 8 - 1);
        for (let i = 0; i < counts.length; i++) counts[i] = view.getFloat64((i + 1) * 8, true);
        return { w: view.getFloat64(0, true), n: counts } satisfies SubWindowState;
      }
      return fixedFields(algorithm, view, n);
    default:
      return fixedFields(algorithm, view, n);
  }
}

/** A fixed-size state's fields, by name. */
function fixedFields(algorithm: keyof typeof FIELDS, view: DataView, n: number): Record<string, number> {
  const fields: readonly string[] = FIELDS[algorithm];
  if (n !== fields.length * 8) throw badState(algorithm, n, `expected ${fields.length * 8} bytes`);
  const out: Record<string, number> = {};
  fields.forEach((f, i) => (out[f] = view.getFloat64(i * 8, true)));
  return out;
}

function number(algorithm: AlgorithmName, v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`redis state: ${algorithm} ${what} must be a finite number, got ${String(v)}`);
  return v;
}

/** Packs a TypeScript algorithm state into the stored value, byte for byte what the Lua twin writes. */
export function encodeState(algorithm: AlgorithmName, state: unknown): Uint8Array {
  if (state === null || typeof state !== 'object') throw new Error(`redis state: a ${algorithm} state must be an object or array, got ${String(state)}`);
  switch (algorithm) {
    case 'sliding-log': {
      const log = state as readonly unknown[];
      const out = new Uint8Array(log.length * 8);
      const view = new DataView(out.buffer);
      log.forEach((v, i) => view.setFloat64(i * 8, number(algorithm, v, `entry ${i}`), true));
      return out;
    }
    case 'concurrency': {
      const leases = state as ConcurrencyState;
      const ids = leases.map((l) => new TextEncoder().encode(l.id));
      const out = new Uint8Array(ids.reduce((sum, id) => sum + LEASE_HEAD + id.byteLength, 0));
      const view = new DataView(out.buffer);
      let pos = 0;
      leases.forEach((l, i) => {
        const id = ids[i] as Uint8Array;
        view.setFloat64(pos, number(algorithm, l.exp, 'lease exp'), true);
        view.setFloat64(pos + 8, number(algorithm, l.cost, 'lease cost'), true);
        view.setUint32(pos + 16, id.byteLength, true);
        out.set(id, pos + LEASE_HEAD);
        pos += LEASE_HEAD + id.byteLength;
      });
      return out;
    }
    case 'sliding-window':
      if (Array.isArray((state as { n?: unknown }).n)) {
        const sub = state as SubWindowState;
        const out = new Uint8Array((sub.n.length + 1) * 8);
        const view = new DataView(out.buffer);
        view.setFloat64(0, number(algorithm, sub.w, 'w'), true);
        sub.n.forEach((v, i) => view.setFloat64((i + 1) * 8, number(algorithm, v, `n[${i}]`), true));
        return out;
      }
      return packFields(algorithm, state);
    default:
      return packFields(algorithm, state);
  }
}

/** Packs a fixed-size state's fields. */
function packFields(algorithm: keyof typeof FIELDS, state: object): Uint8Array {
  const fields: readonly string[] = FIELDS[algorithm];
  const out = new Uint8Array(fields.length * 8);
  const view = new DataView(out.buffer);
  const s = state as Record<string, unknown>;
  fields.forEach((f, i) => view.setFloat64(i * 8, number(algorithm, s[f], f), true));
  return out;
}
