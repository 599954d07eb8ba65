import { ArgumentError, stringOption, type OptionSpec, type ParsedArgs } from './args.js';

/** The pino levels `--log-level` takes, most severe first: the one list `--help`, the check and the docs follow. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** One of `LOG_LEVELS`. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The `--log-level` option of a server command: every level listed in its help. */
export const LOG_LEVEL_OPTION: OptionSpec = {
  type: 'string',
  value: 'L',
  description: `${LOG_LEVELS.slice(0, -1).join(', ')} or ${LOG_LEVELS.at(-1) as string}`,
  default: 'info',
};

/** `--log-level`, checked against `LOG_LEVELS`; `info` when not given. */
export function logLevelOption(args: ParsedArgs): LogLevel {
  const level = stringOption(args, 'log-level') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new ArgumentError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  return level as LogLevel;
}
