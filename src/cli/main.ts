#!/usr/bin/env node
import { ArgumentError, EXIT_USAGE, formatUsage, runCommand, type Command } from './args.js';
import { runAudit } from './audit.js';
import { runCheck } from './check.js';
import { replayCommand } from './replay-command.js';
import { rlsCommand } from './rls.js';
import { serveCommand } from './serve.js';
import { simulateCommand } from './simulate-command.js';

/** Every command declared as a `Command`, in the order `ratecontract help` lists them. */
const COMMANDS: readonly Command[] = [serveCommand, rlsCommand, simulateCommand, replayCommand];
/** Commands that parse their own arguments (`--help` included): name and summary for the listing. */
const OWN_PARSERS: ReadonlyArray<{ readonly name: string; readonly summary: string }> = [
  { name: 'check', summary: 'validate a contract file (YAML or JSON); exit 0 with a summary, 2 with the error line' },
  { name: 'audit', summary: 'the contract table of a config and its findings; exit 1 on an error finding, 2 on an unreadable config' },
];

function usage(): string {
  const listed = [...COMMANDS, ...OWN_PARSERS];
  const width = Math.max(4, ...listed.map((c) => c.name.length));
  return [
    'usage: ratecontract <command> [options]',
    '',
    'commands:',
    ...listed.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    `  ${'help'.padEnd(width)}  print this text; 'ratecontract help <command>' or 'ratecontract <command> --help' for one command`,
    '',
    'Exit codes: 0 success, 1 the command found a problem, 2 bad usage or unreadable input.',
  ].join('\n');
}

async function help(topic: string | undefined): Promise<number> {
  if (topic === undefined) {
    process.stdout.write(usage() + '\n');
    return 0;
  }
  if (topic === 'check') return runCheck(['--help'], (s) => process.stdout.write(s), (s) => process.stderr.write(s));
  if (topic === 'audit') return runAudit(['--help'], (s) => process.stdout.write(s), (s) => process.stderr.write(s));
  const command = COMMANDS.find((c) => c.name === topic);
  if (command === undefined) throw new ArgumentError(`unknown command ${JSON.stringify(topic)}`);
  process.stdout.write(formatUsage(command) + '\n');
  return 0;
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return runCommand(serveCommand, rest);
    case 'rls':
      return runCommand(rlsCommand, rest);
    case 'simulate':
      return runCommand(simulateCommand, rest);
    case 'replay':
      return runCommand(replayCommand, rest);
    case 'check':
      return runCheck(rest, (s) => process.stdout.write(s), (s) => process.stderr.write(s));
    case 'audit':
      return runAudit(rest, (s) => process.stdout.write(s), (s) => process.stderr.write(s));
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
