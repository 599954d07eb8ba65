import { ConfigError } from '../core/errors.js';
import { demoConfig } from '../config/demo.js';
import { loadConfig } from '../config/parse.js';
import type { RateContractConfig } from '../config/types.js';

export const CHECK_USAGE = `usage: ratecontract check [--config FILE]

Validates a contract file (YAML or JSON) with the same checks as the library
and exits: 0 with a one-line summary when it is valid, 2 with one error line
(the file, the path inside it and what is wrong) when it is not or cannot be
read. Without --config, checks the built-in demo contract.`;

/** A CLI usage error: the message names the flag; exit 2. */
export class UsageFailure extends Error {
  override readonly name = 'UsageFailure';
}

export interface CheckArgs {
  readonly config: string | undefined;
  readonly help: boolean;
}

/** Parses `check`'s arguments; throws `UsageFailure` naming a bad flag. */
export function parseCheckArgs(argv: readonly string[]): CheckArgs {
  let config: string | undefined;
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--help' || arg === '-h') help = true;
    else if (arg === '--config' || arg === '-c') {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new UsageFailure(`${arg} needs a file name`);
      config = v;
    } else if (arg.startsWith('--config=')) config = arg.slice('--config='.length);
    else throw new UsageFailure(`unknown option ${arg}`);
  }
  return { config, help };
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
    `${c.compiled.length} limit${c.compiled.length === 1 ? '' : 's'}${c.compiled.length > 0 ? ` (${count(c.compiled, (l) => l.purpose)})` : ''}`,
    `${c.routes.length} route${c.routes.length === 1 ? '' : 's'}${unlimited > 0 ? ` (${unlimited} unlimited)` : ''}`,
    `${stores.length} store${stores.length === 1 ? '' : 's'}${stores.length > 0 ? ` (${count(stores, (s) => s.type)})` : ''}`,
    `replicas ${String(c.replicas)}`,
  ];
  return `${c.file}: ok: ${parts.join(', ')}`;
}

/** Runs `ratecontract check`; returns the exit code. */
export async function runCheck(argv: readonly string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  let args: CheckArgs;
  try {
    args = parseCheckArgs(argv);
  } catch (error) {
    err(`ratecontract check: ${(error as Error).message}\n\n${CHECK_USAGE}\n`);
    return 2;
  }
  if (args.help) {
    out(CHECK_USAGE + '\n');
    return 0;
  }
  try {
    out(summary(await loadContract(args.config)) + '\n');
    return 0;
  } catch (error) {
    if (error instanceof ConfigError) {
      err(error.message + '\n');
      return 2;
    }
    throw error;
  }
}
