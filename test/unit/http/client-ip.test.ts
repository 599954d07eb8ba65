import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../packages/ratecontract/src/core/errors.js';
import { parseForwarded, parseXForwardedFor } from '../../../packages/ratecontract/src/http/forwarded.js';
import { cidrContains, formatIp, maskIp, parseCidr, parseIp } from '../../../packages/ratecontract/src/http/ip-address.js';
import { resolveClientIp, resolveIpOptions, type IpOptions } from '../../../packages/ratecontract/src/http/client-ip.js';

function ip(text: string): string {
  const p = parseIp(text);
  if (p === undefined) throw new Error(`not an address: ${text}`);
  return formatIp(p);
}

function resolve(remote: string | undefined, headers: Record<string, string>, o: IpOptions = {}): string | undefined {
  return resolveClientIp(remote, headers, resolveIpOptions(o));
}

describe('address parsing and formatting', () => {
  it.each([
    ['1.2.3.4', '1.2.3.4'],
    ['::1', '::1'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:0db8:0000:0000:0000:ff00:0042:8329', '2001:db8::ff00:42:8329'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::', '::'],
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::FFFF:cb00:7107', '203.0.113.7'],
    ['0:0:0:0:0:ffff:10.1.2.3', '10.1.2.3'],
  ])('%s -> %s', (input, out) => {
    expect(ip(input)).toBe(out);
  });

  it.each(['', 'unknown', '_hidden', '1.2.3', '1.2.3.4.5', '256.1.1.1', 'example.com', '::g', '1.2.3.4:80', `${'1'.repeat(100)}`])('rejects %j', (bad) => {
    expect(parseIp(bad)).toBeUndefined();
  });

  it('masks to a prefix', () => {
    expect(formatIp(maskIp(parseIp('2001:db8:1:2:3:4:5:6')!, 64))).toBe('2001:db8:1:2::');
    expect(formatIp(maskIp(parseIp('2001:db8:1:2:3:4:5:6')!, 56))).toBe('2001:db8:1::');
    expect(formatIp(maskIp(parseIp('10.1.2.3')!, 24))).toBe('10.1.2.0');
    expect(formatIp(maskIp(parseIp('10.1.2.3')!, 0))).toBe('0.0.0.0');
  });

  it('parses CIDRs, including IPv4-mapped ones, and tests membership', () => {
    const v4 = parseCidr('10.0.0.0/8')!;
    expect(cidrContains(v4, parseIp('10.255.1.2')!)).toBe(true);
    expect(cidrContains(v4, parseIp('::ffff:10.9.9.9')!)).toBe(true);
    expect(cidrContains(v4, parseIp('11.0.0.1')!)).toBe(false);
    expect(cidrContains(v4, parseIp('::1')!)).toBe(false);
    const mapped = parseCidr('::ffff:192.168.0.0/112')!;
    expect(mapped.version).toBe(4);
    expect(mapped.prefix).toBe(16);
    expect(cidrContains(parseCidr('2001:db8::/32')!, parseIp('2001:db8:ffff::1')!)).toBe(true);
    expect(cidrContains(parseCidr('127.0.0.1')!, parseIp('127.0.0.1')!)).toBe(true);
    expect(parseCidr('10.0.0.0/33')).toBeUndefined();
    expect(parseCidr('10.0.0.0/x')).toBeUndefined();
    expect(parseCidr('nonsense/8')).toBeUndefined();
  });
});

describe('forwarding headers', () => {
  it('splits X-Forwarded-For and strips ports', () => {
    expect(parseXForwardedFor('203.0.113.1, 198.51.100.2:4711 , [2001:db8::1]:80, 2001:db8::2')).toEqual(['203.0.113.1', '198.51.100.2', '2001:db8::1', '2001:db8::2']);
    expect(parseXForwardedFor(['1.1.1.1', '2.2.2.2'])).toEqual(['1.1.1.1', '2.2.2.2']);
    expect(parseXForwardedFor(undefined)).toEqual([]);
  });

  it('parses RFC 7239 Forwarded, quoted values, IPv6 brackets and elements without for=', () => {
    expect(parseForwarded('for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711", proto=https, For="198.51.100.1:80"')).toEqual([
      '192.0.2.60',
      '2001:db8:cafe::17',
      '',
      '198.51.100.1',
    ]);
    expect(parseForwarded('for=unknown, for=_hidden')).toEqual(['unknown', '_hidden']);
    expect(parseForwarded('for="a,b", for=1.2.3.4,')).toEqual(['a,b', '1.2.3.4']);
  });
});

describe('client address resolution', () => {
  const spoof = { 'x-forwarded-for': '6.6.6.6', forwarded: 'for=6.6.6.6' };

  it('uses the socket address when no proxy is trusted, whatever the headers say', () => {
    expect(resolve('203.0.113.9', spoof)).toBe('203.0.113.9');
    expect(resolve('203.0.113.9', { ...spoof, 'x-forwarded-for': '7.7.7.7, 8.8.8.8' })).toBe('203.0.113.9');
  });

  it('normalises IPv4-mapped socket addresses', () => {
    expect(resolve('::ffff:127.0.0.1', {})).toBe('127.0.0.1');
  });

  it('groups IPv6 by /64 by default, configurable', () => {
    expect(resolve('2001:db8:1:2:aaaa::1', {})).toBe('2001:db8:1:2::/64');
    expect(resolve('2001:db8:1:2:bbbb::9', {})).toBe('2001:db8:1:2::/64');
    expect(resolve('2001:db8:1:3::1', {})).toBe('2001:db8:1:3::/64');
    expect(resolve('2001:db8:1:2:aaaa::1', {}, { ipv6Prefix: 48 })).toBe('2001:db8:1::/48');
    expect(resolve('2001:db8:1:2:aaaa::1', {}, { ipv6Prefix: 128 })).toBe('2001:db8:1:2:aaaa::1');
    expect(resolve('10.1.2.3', {}, { ipv4Prefix: 24 })).toBe('10.1.2.0/24');
  });

  it('walks X-Forwarded-For right to left through trusted CIDRs only', () => {
    const o: IpOptions = { trustProxy: ['10.0.0.0/8'] };
    // client, then two trusted proxies; the app sees the last proxy.
    expect(resolve('10.0.0.2', { 'x-forwarded-for': '203.0.113.5, 10.0.0.1' }, o)).toBe('203.0.113.5');
    // whatever the client prepends is never reached
    expect(resolve('10.0.0.2', { 'x-forwarded-for': '6.6.6.6, 203.0.113.5, 10.0.0.1' }, o)).toBe('203.0.113.5');
    // an untrusted peer's header is ignored
    expect(resolve('198.51.100.7', { 'x-forwarded-for': '6.6.6.6' }, o)).toBe('198.51.100.7');
    // all trusted: the leftmost
    expect(resolve('10.0.0.2', { 'x-forwarded-for': '10.9.9.9' }, o)).toBe('10.9.9.9');
    // garbage stops the walk at the last good hop
    expect(resolve('10.0.0.2', { 'x-forwarded-for': 'nonsense, 10.0.0.1' }, o)).toBe('10.0.0.1');
    // preset names
    expect(resolve('::1', { 'x-forwarded-for': '203.0.113.5' }, { trustProxy: 'loopback' })).toBe('203.0.113.5');
    expect(resolve('::ffff:127.0.0.1', { 'x-forwarded-for': '2001:db8::1' }, { trustProxy: 'loopback' })).toBe('2001:db8::/64');
  });

  it('counts hops when trustProxy is a number', () => {
    const h = { 'x-forwarded-for': '6.6.6.6, 203.0.113.5, 10.0.0.1' };
    expect(resolve('10.0.0.2', h, { trustProxy: 1 })).toBe('10.0.0.1');
    expect(resolve('10.0.0.2', h, { trustProxy: 2 })).toBe('203.0.113.5');
    expect(resolve('10.0.0.2', h, { trustProxy: 9 })).toBe('6.6.6.6');
    expect(resolve('10.0.0.2', h, { trustProxy: 0 })).toBe('10.0.0.2');
    expect(resolve(undefined, { 'x-forwarded-for': '203.0.113.5' }, { trustProxy: 1 })).toBe('203.0.113.5');
  });

  it('reads RFC 7239 Forwarded when told to, and only then', () => {
    const h = { forwarded: 'for=6.6.6.6, for="[2001:db8:cafe::17]:4711"', 'x-forwarded-for': '7.7.7.7' };
    expect(resolve('127.0.0.1', h, { trustProxy: 'loopback', forwardedHeader: 'forwarded' })).toBe('2001:db8:cafe::/64');
    expect(resolve('127.0.0.1', h, { trustProxy: 'loopback' })).toBe('7.7.7.7');
    expect(resolve('127.0.0.1', { forwarded: 'for=unknown' }, { trustProxy: 'loopback', forwardedHeader: 'forwarded' })).toBe('127.0.0.1');
  });

  it('returns undefined without any address', () => {
    expect(resolve(undefined, {})).toBeUndefined();
  });

  it('rejects bad options at construction, naming the option', () => {
    const bad: Array<[IpOptions, string]> = [
      [{ trustProxy: -1 }, 'trustProxy'],
      [{ trustProxy: ['10.0.0.0/8', 'nope'] }, 'trustProxy[1]'],
      [{ trustProxy: 'nope' }, 'trustProxy'],
      [{ ipv6Prefix: 129 }, 'ipv6Prefix'],
      [{ ipv4Prefix: 1.5 }, 'ipv4Prefix'],
      [{ forwardedHeader: 'x-real-ip' as 'forwarded' }, 'forwardedHeader'],
    ];
    for (const [o, option] of bad) {
      try {
        resolveIpOptions(o);
        expect.unreachable(`accepted ${JSON.stringify(o)}`);
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        expect((e as ConfigError).option).toBe(option);
      }
    }
  });
});

describe('trustsPeer', () => {
  it('trusts peers in the CIDRs and presets, any peer with a hop count, none without trustProxy', async () => {
    const { trustsPeer } = await import('../../../packages/ratecontract/src/http/index.js');
    const loop = trustsPeer('loopback');
    expect([loop('127.0.0.1'), loop('::1'), loop('::ffff:127.0.0.1'), loop('10.0.0.1'), loop(undefined)]).toEqual([true, true, true, false, false]);
    const nets = trustsPeer(['10.0.0.0/8']);
    expect([nets('10.1.2.3'), nets('11.0.0.1'), nets('not an ip')]).toEqual([true, false, false]);
    expect(trustsPeer(2)('203.0.113.9')).toBe(true);
    expect(trustsPeer(undefined)('127.0.0.1')).toBe(false);
    expect(() => trustsPeer('nonsense')).toThrow(ConfigError);
  });
});
