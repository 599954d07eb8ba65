/** How `plural` writes a count. */
export interface PluralOptions {
  /** The form for every count but 1. Default: the singular with an `s`. */
  readonly many?: string;
  /** Renders the number (for example with thousands separators). Default `String`. */
  readonly format?: (n: number) => string;
  /** Only the word, without the number. */
  readonly word?: boolean;
}

/**
 * A count in words, the one place user-facing text picks singular or plural:
 * `plural(1, 'limit')` is `'1 limit'`, `plural(0, 'limit')` `'0 limits'`,
 * `plural(2, 'entry', { many: 'entries' })` `'2 entries'`. The singular is
 * for exactly 1; the form may carry its verb (`'line was'` / `'lines were'`).
 */
export function plural(n: number, one: string, options: PluralOptions = {}): string {
  const word = n === 1 ? one : (options.many ?? `${one}s`);
  return options.word === true ? word : `${(options.format ?? String)(n)} ${word}`;
}
