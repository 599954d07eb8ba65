#!/usr/bin/env node
import { ArgumentError, EXIT_USAGE, formatUsage, runCommand, type Command } from './args.js';
import { simulateCommand } from './simulate-command.js';

/** Every command, in the order `ratecontract help` lists them. */
const COMMANDS: readonly Command[] = [simulateCommand];

function usage(): string {
  const width = Math.max(4, ...COMMANDS.map((c) => c.name.length));
  return [
    'usage: ratecontract <command> [options]',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    `  ${'help'.padEnd(width)}  print this text; 'ratecontract help <command>' or 'ratecontract <command> --help' for one command`,
    '',
    'Exit codes: 0 success, 1 the command found a problem, 2 bad usage or unreadable input.',
  ].join('\n');
}

function help(topic: string | undefined): number {
  if (topic === undefined) {
    process.stdout.write(usage() + '\n');
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === topic);
  if (command === undefined) throw new ArgumentError(`unknown command ${JSON.stringify(topic)}`);
  process.stdout.write(formatUsage(command) + '\n');
  return 0;
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'simulate':
      return runCommand(simulateCommand, rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      return help(rest[0]);
    default:
      throw new ArgumentError(`unknown command ${JSON.stringify(command)}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof ArgumentError) {
      const where = error.command !== undefined ? `ratecontract ${error.command.name}` : 'ratecontract';
      const text = error.command !== undefined ? formatUsage(error.command, true) : usage();
      process.stderr.write(`${where}: ${error.message}\n\n${text}\n`);
    } else {
      process.stderr.write(`ratecontract: ${error instanceof Error ? error.message : String(error)}\n`);
    }
    process.exitCode = EXIT_USAGE;
  },
);
