/** The duration parser (`window: 15m`, `deadline: 8ms`, `failClosedAfter: 30s`). */
import fc from 'fast-check';
import { EDGE_NUMBERS } from '../mutate.js';
import type { FuzzTarget } from '../harness.js';
import { ConfigError, parseDuration } from '../subjects.js';

const UNITS = ['ms', 's', 'm', 'h', 'd'] as const;

/** Durations near the valid shape: digits, a unit, spaces around, with a wrong unit, sign, fraction or size now and then. */
export const durationText: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(fc.nat(1_000_000), fc.constantFrom(...UNITS)).map(([n, u]) => `${n}${u}`),
  fc.tuple(fc.constantFrom('', ' ', '\t', '\n', '\u00a0', '\ufeff'), fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.constantFrom(...UNITS, '', 'M', 'S', 'us', 'ns', 'w', 'y', 'mss', ' ms'), fc.constantFrom('', ' ', '\n')).map(
    ([a, n, u, b]) => `${a}${n}${u}${b}`,
  ),
  fc.tuple(fc.constantFrom('-', '+', '0', '.', '1.', '0x', '1e'), fc.nat(100_000), fc.constantFrom(...UNITS)).map(([p, n, u]) => `${p}${n}${u}`),
  fc.constantFrom(...EDGE_NUMBERS).map((n) => `${n}${'ms'}`),
  fc.stringMatching(/^[0-9msdh .+\-e]{0,24}$/),
  fc.string({ maxLength: 24 }),
);

export const durationTarget: FuzzTarget = {
  name: 'duration',
  arbitrary: durationText,
  seeds: () => ['500ms', '60s', '15m', '1h', '1d', '8ms', '30s', ' 2h ', '86400000ms'],
  dictionary: [...UNITS, ...EDGE_NUMBERS, ' ', '9'.repeat(20), '\n'],
  run: (input) => {
    const ms = parseDuration(input, 'window');
    // The documented result: a positive safe integer of milliseconds.
    if (!Number.isSafeInteger(ms) || ms <= 0) throw new Error(`parseDuration returned ${ms} for ${JSON.stringify(input)}`);
    // A number of ms is the same duration as its text with ms.
    if (parseDuration(ms, 'window') !== ms || parseDuration(`${ms}ms`, 'window') !== ms) throw new Error(`${ms} does not parse back to itself`);
    return ms;
  },
  allowed: (error) => error instanceof ConfigError && error.code === 'RC_INVALID_WINDOW' && error.option === 'window',
};
