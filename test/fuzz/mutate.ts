/**
 * Mutations of valid inputs, as fast-check arbitraries (so a failure
 * shrinks to the fewest, smallest edits): insert a dictionary token or
 * random characters, delete, duplicate or flip a span, splice in part of
 * another input. Positions are fractions of the length, so the same edit
 * applies to any seed.
 */
import fc from 'fast-check';

/** Longest mutated input, characters. */
export const MAX_MUTATED_CHARS = 16 * 1024;

export type Mutation =
  | { readonly op: 'insert'; readonly at: number; readonly text: string }
  | { readonly op: 'delete'; readonly at: number; readonly length: number }
  | { readonly op: 'duplicate'; readonly at: number; readonly length: number; readonly times: number }
  | { readonly op: 'replace'; readonly at: number; readonly text: string }
  | { readonly op: 'splice'; readonly at: number; readonly other: number; readonly from: number; readonly length: number };

const fraction = fc.integer({ min: 0, max: 1_000_000 }).map((n) => n / 1_000_000);

/** Characters a parser's author rarely expects: controls, separators, quotes, non-ASCII, lone surrogates. */
const oddText = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 4 }),
  fc.constantFrom('\0', '\r', '\n', '\r\n', '\t', ' ', '\u00a0', '\u2028', '\ufeff', '\ud800', '\udfff', '\u{1f600}', '\\', '"', "'", '`', '%00', '%2e', '\x7f'),
);

/** An arbitrary list of edits drawing tokens from `dictionary`. */
export function mutationsArb(dictionary: readonly string[], others: number): fc.Arbitrary<Mutation[]> {
  const token = dictionary.length === 0 ? oddText : fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...dictionary) }, { weight: 1, arbitrary: oddText });
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    { weight: 4, arbitrary: fc.record({ op: fc.constant('insert' as const), at: fraction, text: token }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), at: fraction, length: fc.integer({ min: 1, max: 64 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('duplicate' as const), at: fraction, length: fc.integer({ min: 1, max: 64 }), times: fc.integer({ min: 1, max: 64 }) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('replace' as const), at: fraction, text: token }) },
    {
      weight: others > 0 ? 1 : 0,
      arbitrary: fc.record({ op: fc.constant('splice' as const), at: fraction, other: fc.nat(Math.max(0, others - 1)), from: fraction, length: fc.integer({ min: 1, max: 256 }) }),
    },
  );
  return fc.array(mutation, { minLength: 1, maxLength: 8 });
}

/** `input` with `mutations` applied in order, cut to `MAX_MUTATED_CHARS`. `pool` is what `splice` takes from. */
export function applyMutations(input: string, mutations: readonly Mutation[], pool: readonly string[]): string {
  let s = input;
  for (const m of mutations) {
    const at = Math.floor(m.at * (s.length + 1));
    switch (m.op) {
      case 'insert':
        s = s.slice(0, at) + m.text + s.slice(at);
        break;
      case 'delete':
        s = s.slice(0, at) + s.slice(at + m.length);
        break;
      case 'duplicate': {
        const span = s.slice(at, at + m.length);
        s = s.slice(0, at) + span.repeat(m.times) + s.slice(at);
        break;
      }
      case 'replace':
        s = s.slice(0, at) + m.text + s.slice(at + m.text.length);
        break;
      case 'splice': {
        const other = pool[m.other] ?? '';
        const from = Math.floor(m.from * other.length);
        s = s.slice(0, at) + other.slice(from, from + m.length) + s.slice(at);
        break;
      }
    }
    if (s.length > MAX_MUTATED_CHARS) s = s.slice(0, MAX_MUTATED_CHARS);
  }
  return s;
}

/** Inputs made by editing one of `seeds` (which must not be empty). */
export function mutatedArb(seeds: readonly string[], dictionary: readonly string[]): fc.Arbitrary<string> {
  if (seeds.length === 0) throw new Error('mutatedArb needs at least one seed');
  return fc
    .tuple(fc.nat(seeds.length - 1), mutationsArb(dictionary, seeds.length))
    .map(([i, mutations]) => applyMutations(seeds[i] as string, mutations, seeds));
}

/** Tokens every target's dictionary shares: keys that pollute prototypes, numbers at the edges. */
export const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'] as const;
export const EDGE_NUMBERS = ['0', '-0', '-1', '1.5', '1e3', '1e308', '1e309', 'NaN', 'Infinity', '9007199254740993', '4294967296', '18446744073709551616', '00', '0x10'] as const;
