#!/usr/bin/env node
// The `ratecontract` process (bin/ratecontract.js imports this file): its arguments and streams through `run`, its exit code from what `run` resolves to.
import { run } from './run.js';

void run(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
