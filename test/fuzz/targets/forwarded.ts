/**
 * `Forwarded` (RFC 7239) and `X-Forwarded-For`, the addresses in them, and
 * the `trustProxy` entries they are checked against: the header parsers,
 * `parseIp` / `parseCidr`, the client address walk, and `resolveIpOptions`
 * (a `trustProxy` string is a CIDR, an address or a preset name).
 */
import fc from 'fast-check';
import { docLines } from '../corpus.js';
import { HOSTILE_KEYS } from '../mutate.js';
import type { FuzzTarget } from '../harness.js';
import { clientAddress, ConfigError, formatIp, parseCidr, parseForwarded, parseIp, parseXForwardedFor, resolveIpOptions, trustsPeer } from '../subjects.js';

const address = fc.oneof(
  fc.ipV4(),
  fc.ipV6(),
  fc.ipV4Extended(),
  fc.ipV4().map((a) => `::ffff:${a}`),
  fc.tuple(fc.ipV6(), fc.constantFrom('%eth0', '%1', '%')).map(([a, z]) => `${a}${z}`),
  fc.constantFrom('unknown', '_hidden', '_SEVKISEK', 'localhost', '', '::', '::1', '1::', ':::', '1.2.3', '1.2.3.4.5', '01.2.3.4', '256.1.1.1', '[::1]', '::ffff:1.2.3.4:80'),
);

/** A node as a header writes it: bare, with a port, bracketed, quoted. */
const node = fc.oneof(
  address,
  fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 70_000 })).map(([a, p]) => `${a}:${p}`),
  fc.tuple(fc.ipV6(), fc.constantFrom('', ':80', ':_x', ':')).map(([a, p]) => `[${a}]${p}`),
);

const pairValue = fc.oneof(node, node.map((n) => `"${n}"`), fc.constantFrom('"a\\"b"', '"unterminated', 'x;y', '"\\', '""'));
const pairKey = fc.constantFrom('for', 'FOR', ' for', 'by', 'proto', 'host', 'for ', 'x', '');
const element = fc.array(fc.tuple(pairKey, pairValue).map(([k, v]) => `${k}=${v}`), { minLength: 0, maxLength: 4 }).map((pairs) => pairs.join(';'));

/** A `Forwarded` value: elements of `key=value` pairs. */
export const forwardedValue: fc.Arbitrary<string> = fc.array(element, { maxLength: 5 }).chain((els) => fc.constantFrom(',', ', ', ' ,\t').map((sep) => els.join(sep)));
/** An `X-Forwarded-For` value: nodes joined by commas. */
export const xffValue: fc.Arbitrary<string> = fc.array(node, { maxLength: 6 }).chain((ns) => fc.constantFrom(',', ', ', ' , ').map((sep) => ns.join(sep)));

/** A `trustProxy` entry. */
export const trustEntry: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(address, fc.constantFrom('', '/0', '/8', '/32', '/33', '/64', '/104', '/128', '/129', '/-1', '/', '/0008', '/1.5')).map(([a, p]) => `${a}${p}`),
  fc.constantFrom('loopback', 'linklocal', 'uniquelocal', 'Loopback', ...HOSTILE_KEYS),
);

const OPTIONS = [
  resolveIpOptions({ trustProxy: 2 }),
  resolveIpOptions({ trustProxy: ['loopback', 'uniquelocal'], forwardedHeader: 'forwarded' }),
  resolveIpOptions({ trustProxy: ['::/0', '0.0.0.0/0'], ipv6Prefix: 48 }),
];

export const forwardedTarget: FuzzTarget = {
  name: 'forwarded',
  arbitrary: fc.oneof(forwardedValue, xffValue, node, trustEntry),
  seeds: () => [
    'for=192.0.2.60;proto=http;by=203.0.113.43',
    'for="[2001:db8:cafe::17]:4711"',
    'for=192.0.2.43, for=198.51.100.17;by=203.0.113.60;proto=http;host=example.com',
    'for=unknown, for="_gazonk"',
    '203.0.113.195, 70.41.3.18, 150.172.238.178',
    '2001:db8:85a3::8a2e:370:7334, [::1]:8080, 10.0.0.1:443',
    '::ffff:10.0.0.0/104',
    'fe80::1%eth0',
    'uniquelocal',
    ...docLines(/^(Forwarded|X-Forwarded-For):/i).map((l) => l.slice(l.indexOf(':') + 1).trim()),
  ],
  dictionary: [...HOSTILE_KEYS, 'for=', ';', ',', '"', '\\', '[', ']', ':', '::', '.', '/', '%', 'ffff:', '255', '0', 'by=', 'proto=', ' ', '\t'],
  run: (input) => {
    const chains = [parseForwarded(input), parseXForwardedFor(input), parseForwarded([input, input]), parseXForwardedFor([input, 'x'])];
    const ip = parseIp(input);
    // A parsed address formats to text that parses back to the same bytes.
    if (ip !== undefined) {
      const again = parseIp(formatIp(ip));
      if (again === undefined || again.version !== ip.version || again.bytes.join('.') !== ip.bytes.join('.')) throw new Error(`${JSON.stringify(input)} formats as ${formatIp(ip)}, which parses to something else`);
    }
    const cidr = parseCidr(input);
    const peers = OPTIONS.map((o) => clientAddress('10.0.0.1', { forwarded: input, 'x-forwarded-for': input }, o));
    let resolved: unknown;
    try {
      resolved = [resolveIpOptions({ trustProxy: input }), resolveIpOptions({ trustProxy: [input, 'loopback'] }), trustsPeer(input)('127.0.0.1')];
    } catch (error) {
      // The documented refusal of a bad trustProxy entry; anything else escapes.
      if (!(error instanceof ConfigError) || error.code !== 'RC_INVALID_OPTION' || !error.option.startsWith('trustProxy')) throw error;
    }
    return { chains, ip, cidr, peers, resolved };
  },
  allowed: () => false,
};
