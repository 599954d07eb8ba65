import { ConfigError } from './errors.js';
import { didYouMean } from './suggest.js';

/**
 * Refuses option names that `known` does not list, so a typo (`onErorr`,
 * `maxkeys`) is an error that names it, never a silently ignored clause.
 * `path` is where the options sit (`'redisStore'`, `'stores.auth.breaker'`).
 */
export function refuseUnknown(options: object, known: readonly string[], path: string): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new ConfigError('RC_INVALID_OPTION', path === '' ? key : `${path}.${key}`, `unknown option ${JSON.stringify(key)}${didYouMean(key, known)} (known: ${known.join(', ')})`);
    }
  }
}
