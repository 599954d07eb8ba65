import { ConfigError } from 'ratecontract';
import { demoConfig } from '../contract/demo.js';
import { loadConfig } from 'ratecontract/config';
import type { RateContractConfig } from 'ratecontract/config';
import { plural } from '../contract/plural.js';
import { ArgumentError, EXIT_USAGE, stringOption, type Command, type CommandIo, type ParsedArgs } from './args.js';

/** The `check` command: validates a contract file, given as `check FILE` or `check --config FILE`. */
export const checkCommand: Command = {
  name: 'check',
  summary: 'validate a contract file (YAML or JSON); exit 0 with a summary, 2 with the error line',
  fileOption: 'config',
  options: {
    config: { type: 'string', value: 'FILE', description: 'the contract file (YAML or JSON)', default: 'the built-in demo contract' },
  },
  details: [
    'Validates a contract file with the same checks as the library and exits: 0 with a one-line',
    'summary when it is valid, 2 with one error line (the file, the path inside it and what is wrong)',
    'when it is not or cannot be read.',
    '',
    'Examples:',
    '  ratecontract check ratecontract.yaml',
    '  ratecontract check --config ratecontract.yaml',
  ].join('\n'),
  run: runCheck,
};

/** `--config FILE` of a command, refusing an empty name. */
export function contractOption(args: ParsedArgs): string | undefined {
  const file = stringOption(args, 'config');
  if (file === '') throw new ArgumentError('--config needs a file name');
  return file;
}

/** Loads `path`, or the built-in demo contract when `path` is undefined. Throws `ConfigError` (a `ConfigFileError` for files). */
export async function loadContract(path: string | undefined): Promise<RateContractConfig> {
  return path === undefined ? demoConfig() : loadConfig(path);
}

function count<T>(items: readonly T[], pick: (t: T) => string): string {
  const by = new Map<string, number>();
  for (const t of items) by.set(pick(t), (by.get(pick(t)) ?? 0) + 1);
  return [...by].map(([k, n]) => `${n} ${k}`).join(', ');
}

/** The one-line summary `check` prints for a valid file. */
export function summary(c: RateContractConfig): string {
  const stores = Object.values(c.stores);
  const unlimited = c.routes.filter((r) => r.limits.length === 0).length;
  const parts = [
    `${plural(c.compiled.length, 'limit')}${c.compiled.length > 0 ? ` (${count(c.compiled, (l) => l.purpose)})` : ''}`,
    `${plural(c.routes.length, 'route')}${unlimited > 0 ? ` (${unlimited} unlimited)` : ''}`,
    `${plural(stores.length, 'store')}${stores.length > 0 ? ` (${count(stores, (s) => s.type)})` : ''}`,
    `replicas ${String(c.replicas)}`,
  ];
  return `${c.file}: ok: ${parts.join(', ')}`;
}

async function runCheck(args: ParsedArgs, io: CommandIo): Promise<number> {
  const file = contractOption(args);
  try {
    io.stdout.write(summary(await loadContract(file)) + '\n');
    return 0;
  } catch (error) {
    if (error instanceof ConfigError) {
      io.stderr.write(error.message + '\n');
      return EXIT_USAGE;
    }
    throw error;
  }
}
