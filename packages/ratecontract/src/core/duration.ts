import { ConfigError } from './errors.js';

const UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

const PATTERN = /^(\d+)(ms|s|m|h|d)$/;

/** A duration: a positive integer number of milliseconds, or a string such as `'500ms'`, `'60s'`, `'15m'`, `'1h'`, `'1d'`. */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

/**
 * Parses a duration into integer milliseconds. Throws a `ConfigError` naming
 * `option` for anything that is not a positive integer number of milliseconds.
 */
export function parseDuration(value: unknown, option: string): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const match = PATTERN.exec(value.trim());
    if (!match) {
      throw new ConfigError(
        'RC_INVALID_WINDOW',
        option,
        `${JSON.stringify(value)} is not a duration; expected one such as '500ms', '60s', '15m', '1h', '1d' or a number of milliseconds`,
      );
    }
    ms = Number(match[1]) * (UNITS[match[2] ?? 'ms'] ?? 1);
  } else {
    throw new ConfigError('RC_INVALID_WINDOW', option, `expected a duration such as '15m' or a number of milliseconds, got ${value === null ? 'nothing (null)' : typeof value}`);
  }
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new ConfigError('RC_INVALID_WINDOW', option, `must be a positive integer number of milliseconds, got ${String(value)}`);
  }
  return ms;
}

/** Formats milliseconds in the largest unit that divides them exactly (`60000` -> `'1m'`). */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
