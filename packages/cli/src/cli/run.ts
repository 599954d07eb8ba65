import { readFileSync } from 'node:fs';
import { didYouMean } from 'ratecontract/internal';
import { ArgumentError, EXIT_USAGE, formatUsage, processIo, runCommand, type Command, type CommandIo } from './args.js';
import { auditCommand } from './audit-command.js';
import { checkCommand } from './check.js';
import { replayCommand } from './replay-command.js';
import { rlsCommand } from './rls.js';
import { serveCommand } from './serve.js';
import { simulateCommand } from './simulate-command.js';
import { suggestCommand } from './suggest-command.js';

/** Every command, in the order `ratecontract help` lists them. */
const COMMANDS: readonly Command[] = [serveCommand, rlsCommand, simulateCommand, replayCommand, suggestCommand, checkCommand, auditCommand];

const VERSION_FLAGS = ['--version', '-V'];

function usage(): string {
  const width = Math.max(4, ...COMMANDS.map((c) => c.name.length));
  const flags = ['-V, --version', '-h, --help'];
  const flagWidth = Math.max(...flags.map((f) => f.length));
  return [
    'usage: ratecontract <command> [options]',
    '       ratecontract --version',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    `  ${'help'.padEnd(width)}  print this text; 'ratecontract help <command>' or 'ratecontract <command> --help' for one command`,
    '',
    'options:',
    `  ${(flags[0] ?? '').padEnd(flagWidth)}  print the version (from the package's package.json) and exit`,
    `  ${(flags[1] ?? '').padEnd(flagWidth)}  print this text and exit`,
    '',
    'Exit codes: 0 success, 1 the command found a problem, 2 bad usage or unreadable input.',
  ].join('\n');
}

/** The version in the package.json of the installed package, read when asked (two folders up from dist/cli/run.js). */
function version(): string {
  const file = new URL('../../package.json', import.meta.url);
  const pkg = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown };
  if (typeof pkg.version !== 'string') throw new Error(`${file.pathname} has no version`);
  return pkg.version;
}

function unknownCommand(word: string): ArgumentError {
  const names = [...COMMANDS.map((c) => c.name), 'help', ...VERSION_FLAGS.slice(0, 1), '--help'];
  return new ArgumentError(`unknown command ${JSON.stringify(word)}${didYouMean(word, names)}`);
}

function help(topic: string | undefined, io: CommandIo): number {
  if (topic === undefined) {
    io.stdout.write(usage() + '\n');
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === topic);
  if (command === undefined) throw unknownCommand(topic);
  io.stdout.write(formatUsage(command) + '\n');
  return 0;
}

async function dispatch(name: string | undefined, rest: readonly string[], io: CommandIo): Promise<number> {
  const command = COMMANDS.find((c) => c.name === name);
  if (command !== undefined) return runCommand(command, rest, io);
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') return help(rest[0], io);
  if (VERSION_FLAGS.includes(name)) {
    if (rest.length > 0) throw new ArgumentError(`${name} takes no argument, got ${JSON.stringify(rest[0])}`);
    io.stdout.write(version() + '\n');
    return 0;
  }
  throw unknownCommand(name);
}

/**
 * Runs `ratecontract ...argv` (the arguments after the program name) and
 * resolves to its exit code: what `main.ts` does for the `ratecontract`
 * process, callable in-process with other streams (`io`, the process's by
 * default). Never rejects: a usage mistake prints the message and the usage
 * to `io.stderr`, an input the command could not read one line naming it,
 * and both resolve to 2 (`EXIT_USAGE`), never a stack trace.
 */
export async function run(argv: readonly string[], io: CommandIo = processIo()): Promise<number> {
  const [name, ...rest] = argv;
  try {
    return await dispatch(name, rest, io);
  } catch (error) {
    if (error instanceof ArgumentError) {
      const where = error.command !== undefined ? `ratecontract ${error.command.name}` : 'ratecontract';
      const text = error.command !== undefined ? formatUsage(error.command, true) : usage();
      io.stderr.write(`${where}: ${error.message}\n\n${text}\n`);
    } else {
      // An input the command could not read (a trace, an --svg file): one line naming the command and the file.
      const where = COMMANDS.some((c) => c.name === name) ? `ratecontract ${name ?? ''}` : 'ratecontract';
      io.stderr.write(`${where}: ${error instanceof Error ? error.message : String(error)}\n`);
    }
    return EXIT_USAGE;
  }
}
