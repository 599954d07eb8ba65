#!/usr/bin/env node
import { parseSimulateArgs, renderTable, simulate } from './simulate.js';

const USAGE = `usage: ratecontract <command> [options]

commands:
  simulate   run every algorithm on a traffic pattern with a virtual clock and
             compare what each admits with its theoretical bound
             options: --limit N (100) --window W (60s) --burst B
                      --pattern boundary|steady|bursty (boundary) --windows K (10)
                      --hold D (1s, concurrency lease hold) --algorithms a,b,...
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
