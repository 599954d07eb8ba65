import { ConfigError } from '../core/errors.js';
import { parseForwarded, parseXForwardedFor, type HeaderRecord } from './forwarded.js';
import { cidrContains, formatIp, maskIp, parseCidr, parseIp, type Cidr, type IpAddress } from './ip-address.js';

/**
 * Which proxies may tell us the client address:
 * - a number `n`: exactly `n` proxies stand in front of the app (the socket peer is the first); the client is the
 *   entry `n` hops from the right of `[...forwarded, peer]`;
 * - CIDRs (`'10.0.0.0/8'`, `'::1'`) or the names `'loopback'`, `'linklocal'`, `'uniquelocal'`: the forwarding chain
 *   is read right to left while the current hop is in one of them.
 */
export type TrustProxy = number | string | readonly string[];

/** Options of client address resolution. */
export interface IpOptions {
  /** Default: none; the socket address is the client, and forwarding headers are ignored. */
  readonly trustProxy?: TrustProxy | undefined;
  /**
   * The header the trusted proxies write. Default `'x-forwarded-for'`. Only one is read: a proxy that appends to
   * one header passes the other through untouched, so reading both would let a client choose its own address.
   */
  readonly forwardedHeader?: 'x-forwarded-for' | 'forwarded' | undefined;
  /** IPv6 clients are grouped by this prefix length. Default 64 (one customer network). */
  readonly ipv6Prefix?: number | undefined;
  /** IPv4 clients are grouped by this prefix length. Default 32 (one address). */
  readonly ipv4Prefix?: number | undefined;
}

type Trust = { readonly kind: 'none' } | { readonly kind: 'hops'; readonly hops: number } | { readonly kind: 'cidrs'; readonly cidrs: readonly Cidr[] };

/** Validated `IpOptions`. */
export interface ResolvedIpOptions {
  readonly trust: Trust;
  readonly header: 'x-forwarded-for' | 'forwarded';
  readonly ipv6Prefix: number;
  readonly ipv4Prefix: number;
}

const PRESETS: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

function prefixOption(v: unknown, max: number, fallback: number, option: string): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) {
    throw new ConfigError('RC_INVALID_OPTION', option, `must be an integer from 0 to ${max}, got ${typeof v === 'number' ? String(v) : typeof v}`);
  }
  return v;
}

/** Validates `IpOptions`; throws `ConfigError` naming the option. */
export function resolveIpOptions(o: IpOptions): ResolvedIpOptions {
  const t = o.trustProxy;
  let trust: Trust = { kind: 'none' };
  if (typeof t === 'number') {
    if (!Number.isSafeInteger(t) || t < 0) throw new ConfigError('RC_INVALID_OPTION', 'trustProxy', `a hop count must be a non-negative integer, got ${String(t)}`);
    trust = t === 0 ? { kind: 'none' } : { kind: 'hops', hops: t };
  } else if (t !== undefined) {
    const list: readonly unknown[] = typeof t === 'string' ? [t] : Array.isArray(t) ? (t as readonly unknown[]) : [t];
    const cidrs: Cidr[] = [];
    list.forEach((entry, i) => {
      const at = typeof t === 'string' ? 'trustProxy' : `trustProxy[${i}]`;
      if (typeof entry !== 'string') throw new ConfigError('RC_INVALID_OPTION', at, `expected a CIDR, an address or a preset name, got ${typeof entry}`);
      // Own presets only: `constructor` or `__proto__` is a (bad) CIDR, not Object.prototype's member.
      for (const spec of (Object.hasOwn(PRESETS, entry) ? PRESETS[entry] : undefined) ?? [entry]) {
        const c = parseCidr(spec.trim());
        if (c === undefined) {
          throw new ConfigError('RC_INVALID_OPTION', at, `not a CIDR, an address or one of ${Object.keys(PRESETS).join(', ')}: ${JSON.stringify(entry)}`);
        }
        cidrs.push(c);
      }
    });
    trust = cidrs.length === 0 ? { kind: 'none' } : { kind: 'cidrs', cidrs };
  }
  const header = o.forwardedHeader ?? 'x-forwarded-for';
  if (header !== 'x-forwarded-for' && header !== 'forwarded') {
    throw new ConfigError('RC_INVALID_OPTION', 'forwardedHeader', `must be 'x-forwarded-for' or 'forwarded', got ${JSON.stringify(header)}`);
  }
  return {
    trust,
    header,
    ipv6Prefix: prefixOption(o.ipv6Prefix, 128, 64, 'ipv6Prefix'),
    ipv4Prefix: prefixOption(o.ipv4Prefix, 32, 32, 'ipv4Prefix'),
  };
}

function trusted(cidrs: readonly Cidr[], ip: IpAddress): boolean {
  for (const c of cidrs) if (cidrContains(c, ip)) return true;
  return false;
}

/**
 * The client's address: the socket peer, unless trusted proxies are
 * configured; then the forwarding chain is read right to left through trusted
 * hops only, so entries a client wrote itself are never reached. An entry that
 * is not an address stops the walk at the last good one. `undefined` when no
 * address is known at all.
 */
export function clientAddress(remote: string | undefined, headers: HeaderRecord, o: ResolvedIpOptions): IpAddress | undefined {
  const peer = remote === undefined ? undefined : parseIp(remote);
  const trust = o.trust;
  if (trust.kind === 'none') return peer;
  const chain = o.header === 'forwarded' ? parseForwarded(headers['forwarded']) : parseXForwardedFor(headers['x-forwarded-for']);
  if (trust.kind === 'hops') {
    // [...chain, peer]; the client is `hops` entries left of the peer (or the leftmost entry).
    let best = peer;
    for (let k = 1; k <= trust.hops && k <= chain.length; k++) {
      const ip = parseIp(chain[chain.length - k] as string);
      if (ip === undefined) break;
      best = ip;
    }
    return best;
  }
  if (peer === undefined) return undefined;
  let current = peer;
  for (let j = chain.length - 1; j >= 0 && trusted(trust.cidrs, current); j--) {
    const next = parseIp(chain[j] as string);
    if (next === undefined) break;
    current = next;
  }
  return current;
}

/** The `ip` key of an address: the address itself, or its network (`2001:db8:1:2::/64`) when grouped by prefix. */
export function ipKey(ip: IpAddress, o: ResolvedIpOptions): string {
  const max = ip.version === 4 ? 32 : 128;
  const prefix = ip.version === 4 ? o.ipv4Prefix : o.ipv6Prefix;
  if (prefix >= max) return formatIp(ip);
  return `${formatIp(maskIp(ip, prefix))}/${prefix}`;
}

/** `clientAddress` then `ipKey`: the value key extractors see as `ctx.ip`. */
export function resolveClientIp(remote: string | undefined, headers: HeaderRecord, o: ResolvedIpOptions): string | undefined {
  // Without trusted proxies the key depends on the socket address alone: remember it (bounded).
  if (o.trust.kind === 'none' && remote !== undefined) {
    let cache = peerKeys.get(o);
    if (cache === undefined) {
      cache = new Map();
      peerKeys.set(o, cache);
    }
    let key = cache.get(remote);
    if (key === undefined) {
      const ip = clientAddress(remote, headers, o);
      key = ip === undefined ? null : ipKey(ip, o);
      if (cache.size >= PEER_CACHE_SIZE) cache.clear();
      cache.set(remote, key);
    }
    return key ?? undefined;
  }
  const ip = clientAddress(remote, headers, o);
  return ip === undefined ? undefined : ipKey(ip, o);
}

/** Socket address -> `ip` key, per resolved options, when no proxy is trusted. Cleared when full, so a flood of addresses cannot grow it. */
const peerKeys = new WeakMap<ResolvedIpOptions, Map<string, string | null>>();
const PEER_CACHE_SIZE = 4096;

/**
 * A predicate: whether the socket peer `remote` is a proxy `trustProxy`
 * trusts (so what it says about the request, such as a principal header,
 * may be believed). With a hop count, any peer is trusted; with no
 * `trustProxy`, none. Throws `ConfigError` for an invalid `trustProxy`.
 */
export function trustsPeer(trustProxy: TrustProxy | undefined): (remote: string | undefined) => boolean {
  const { trust } = resolveIpOptions({ trustProxy });
  if (trust.kind === 'none') return () => false;
  if (trust.kind === 'hops') return (remote) => remote !== undefined;
  return (remote) => {
    const ip = remote === undefined ? undefined : parseIp(remote);
    return ip !== undefined && trusted(trust.cidrs, ip);
  };
}
