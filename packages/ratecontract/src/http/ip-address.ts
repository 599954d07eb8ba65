import { isIPv4, isIPv6 } from 'node:net';

/** An IP address as bytes: 4 for IPv4, 16 for IPv6. IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is always held as IPv4. */
export interface IpAddress {
  readonly version: 4 | 6;
  readonly bytes: Uint8Array;
}

/** A CIDR block: the network's bytes (already masked) and the prefix length. */
export interface Cidr {
  readonly version: 4 | 6;
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

function parseV4(text: string): Uint8Array {
  const out = new Uint8Array(4);
  const parts = text.split('.');
  for (let i = 0; i < 4; i++) out[i] = Number(parts[i]);
  return out;
}

function parseV6(text: string): Uint8Array {
  const out = new Uint8Array(16);
  let head = text;
  let tail = '';
  const gap = text.indexOf('::');
  if (gap >= 0) {
    head = text.slice(0, gap);
    tail = text.slice(gap + 2);
  }
  const toWords = (s: string): number[] => {
    if (s === '') return [];
    const words: number[] = [];
    for (const part of s.split(':')) {
      if (part.includes('.')) {
        const v4 = parseV4(part);
        words.push(((v4[0] as number) << 8) | (v4[1] as number), ((v4[2] as number) << 8) | (v4[3] as number));
      } else {
        words.push(parseInt(part, 16));
      }
    }
    return words;
  };
  const h = toWords(head);
  const t = toWords(tail);
  const words = [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

/**
 * Parses an IPv4 or IPv6 address (a zone id such as `%eth0` is dropped).
 * IPv4-mapped IPv6 addresses become IPv4. Returns `undefined` for anything
 * that is not an address (host names, `unknown`, obfuscated identifiers).
 */
export function parseIp(text: string): IpAddress | undefined {
  if (text.length === 0 || text.length > 64) return undefined;
  if (isIPv4(text)) return { version: 4, bytes: parseV4(text) };
  const zone = text.indexOf('%');
  const bare = zone >= 0 ? text.slice(0, zone) : text;
  if (!isIPv6(bare)) return undefined;
  const bytes = parseV6(bare);
  if (MAPPED_PREFIX.every((b, i) => bytes[i] === b)) return { version: 4, bytes: bytes.slice(12) };
  return { version: 6, bytes };
}

/** Formats an address canonically: dotted quad, or RFC 5952 IPv6 (lower case, longest zero run compressed). */
export function formatIp(ip: IpAddress): string {
  const b = ip.bytes;
  if (ip.version === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  const words: number[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((b[i] as number) << 8) | (b[i + 1] as number));
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]): string => ws.map((w) => w.toString(16)).join(':');
  if (bestStart < 0) return hex(words);
  return `${hex(words.slice(0, bestStart))}::${hex(words.slice(bestStart + bestLen))}`;
}

/** Keeps the first `prefix` bits of the address and zeroes the rest. */
export function maskIp(ip: IpAddress, prefix: number): IpAddress {
  const bytes = new Uint8Array(ip.bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const bits = Math.max(0, Math.min(8, prefix - 8 * i));
    bytes[i] = (ip.bytes[i] as number) & ((0xff << (8 - bits)) & 0xff);
  }
  return { version: ip.version, bytes };
}

/**
 * Parses `a.b.c.d/n`, `x::y/n`, or a bare address (a /32 or /128). An
 * IPv4-mapped IPv6 block (`::ffff:10.0.0.0/104`) becomes the IPv4 block.
 */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const ip = parseIp(slash >= 0 ? text.slice(0, slash) : text);
  if (ip === undefined) return undefined;
  const max = ip.version === 4 ? 32 : 128;
  let prefix = max;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p)) return undefined;
    prefix = Number(p);
    const mapped = ip.version === 4 && text.includes(':');
    if (mapped) prefix -= 96;
    if (prefix < 0 || prefix > max) return undefined;
  }
  return { version: ip.version, bytes: maskIp(ip, prefix).bytes, prefix };
}

/** Whether `ip` lies in `cidr`. */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  if (cidr.version !== ip.version) return false;
  const masked = maskIp(ip, cidr.prefix).bytes;
  for (let i = 0; i < masked.length; i++) if (masked[i] !== cidr.bytes[i]) return false;
  return true;
}
