#!/usr/bin/env node
import { runAudit } from './audit.js';
import { runCheck } from './check.js';
import { parseSimulateArgs, renderTable, simulate } from './simulate.js';

const USAGE = `usage: ratecontract <command> [options]

commands:
  simulate   run every algorithm on a traffic pattern with a virtual clock and
             compare what each admits with its theoretical bound
             options: --limit N (100) --window W (60s) --burst B
                      --pattern boundary|steady|bursty (boundary) --windows K (10)
                      --hold D (1s, concurrency lease hold) --algorithms a,b,...
  check      validate a contract file (YAML or JSON); exit 0 with a summary,
             2 with the error line
             options: --config FILE (default: the built-in demo contract)
  audit      the contract table of a config and its findings; exit 1 on an
             error finding, 2 on an unreadable config
             options: --config FILE (default: the built-in demo contract)
                      --json | --markdown  --against OLD_FILE
  help       print this text`;

async function main(argv: readonly string[]): Promise<number> {
  const [command = 'help', ...rest] = argv;
  switch (command) {
    case 'simulate': {
      const options = parseSimulateArgs(rest);
      const results = await simulate(options);
      process.stdout.write(renderTable(options, results) + '\n');
      return 0;
    }
    case 'check':
      return runCheck(rest, (s) => process.stdout.write(s), (s) => process.stderr.write(s));
    case 'audit':
      return runAudit(rest, (s) => process.stdout.write(s), (s) => process.stderr.write(s));
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE + '\n');
      return 0;
    default:
      process.stderr.write(`unknown command ${JSON.stringify(command)}\n\n${USAGE}\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`ratecontract: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 2;
  },
);
