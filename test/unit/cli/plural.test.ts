import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plural } from '../../../packages/cli/src/contract/plural.js';

describe('plural', () => {
  it.each([
    [0, 'limit', undefined, '0 limits'],
    [1, 'limit', undefined, '1 limit'],
    [2, 'limit', undefined, '2 limits'],
    [0, 'entry', 'entries', '0 entries'],
    [1, 'entry', 'entries', '1 entry'],
    [2, 'entry', 'entries', '2 entries'],
    [1, 'line was', 'lines were', '1 line was'],
    [2, 'line was', 'lines were', '2 lines were'],
  ])('%d %s -> %s', (n, one, many, text) => {
    expect(plural(n, one, many === undefined ? {} : { many })).toBe(text);
  });

  it('formats the number with the given formatter, and picks the form from the number, not its text', () => {
    const en = (x: number): string => x.toLocaleString('en-US');
    expect(plural(1234, 'line', { format: en })).toBe('1,234 lines');
    expect(plural(1, 'line', { format: en })).toBe('1 line');
    expect(plural(-1, 'step')).toBe('-1 steps');
    expect(plural(1.5, 'second')).toBe('1.5 seconds');
  });

  it('word: only the word', () => {
    expect([0, 1, 2].map((n) => plural(n, 'line', { word: true }))).toEqual(['lines', 'line', 'lines']);
  });

  it('property: the singular exactly for 1, and the number is always the text before the word', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e6, max: 1e6 }), (n) => {
        const text = plural(n, 'route');
        expect(text).toBe(`${n} ${n === 1 ? 'route' : 'routes'}`);
      }),
    );
  });
});
