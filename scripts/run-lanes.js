#!/usr/bin/env node
// Runs npm scripts in lanes: the scripts of one lane one after another, the lanes at the same time.
// `npm test` and `npm run test:full` start with
//
//   node scripts/run-lanes.js "build lint" typecheck
//
// lint needs the library's dist/ (packages/cli's sources type-check against its declarations), so it
// follows the build in one lane; the typecheck reads only sources and runs beside them: on two cores
// the three take about as long as the build and lint alone. Each script's output is held and printed
// in one piece when it ends, under a line with its name, status and time, so the lanes' outputs never
// interleave. A lane stops at its first failing script; the other lanes run to their end, and the
// exit code is 1 if any script failed (0 otherwise), after a summary of every script's time.
import { spawn } from 'node:child_process';

const lanes = process.argv.slice(2).map((arg) => arg.split(/\s+/).filter((s) => s !== ''));
if (lanes.length === 0 || lanes.some((l) => l.length === 0)) {
  console.error('usage: node scripts/run-lanes.js "script script ..." "script ..." ...  (npm scripts; one argument per lane)');
  process.exit(2);
}

// Under npm, run npm the way it ran this script; otherwise `npm` from the PATH.
const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];

/** Runs `npm run <script>`; resolves to its exit code, its output (stdout and stderr as they came) and seconds taken. */
function runScript(script) {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(npm[0], [...npm.slice(1), 'run', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (d) => chunks.push(d));
    child.stderr.on('data', (d) => chunks.push(d));
    const done = (code, error) => resolve({ script, code, output: Buffer.concat(chunks).toString() + (error ? `${error.message}\n` : ''), seconds: (performance.now() - started) / 1000 });
    child.on('error', (error) => done(1, error));
    child.on('close', (code, signal) => done(code ?? (signal ? 1 : 0)));
  });
}

const results = [];

async function runLane(scripts) {
  for (const script of scripts) {
    const r = await runScript(script);
    results.push(r);
    const status = r.code === 0 ? 'ok' : `FAILED (exit ${r.code})`;
    process.stdout.write(`\n> ${r.script}: ${status} in ${r.seconds.toFixed(1)} s\n${r.output}`);
    if (r.code !== 0) return;
  }
}

const started = performance.now();
await Promise.all(lanes.map(runLane));
const failed = results.filter((r) => r.code !== 0);
const summary = results.map((r) => `${r.script} ${r.seconds.toFixed(1)} s${r.code === 0 ? '' : ' (failed)'}`).join(', ');
process.stdout.write(`\nrun-lanes: ${summary}; ${((performance.now() - started) / 1000).toFixed(1)} s in all\n`);
const skipped = lanes.flat().filter((s) => !results.some((r) => r.script === s));
if (skipped.length > 0) process.stdout.write(`run-lanes: not run after a failure: ${skipped.join(', ')}\n`);
process.exitCode = failed.length > 0 ? 1 : 0;
