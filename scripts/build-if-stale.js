#!/usr/bin/env node
// Runs `npm run build` only when the build is missing or older than its sources, so that
// `npm run serve` and `npm run simulate` start in well under a second once built.
//
//   node scripts/build-if-stale.js           build if stale, else do nothing (and print nothing)
//   node scripts/build-if-stale.js --check   exit 0 if the build is up to date, 1 (with the reason) if not
//
// Each package of the workspace (package.json's `workspaces`) is built from its src/ into its dist/.
// A package is stale when some src/**/*.ts (not .d.ts) has no dist/**/*.js, or the oldest of those
// outputs is older than the newest file under its src/ or the newest of its tsconfig.json, the
// shared tsconfig.base.json and the installed compiler's package.json. tsc rewrites every output on
// each build, so after a build the oldest output is newer than every input it read. Outputs of
// deleted sources are ignored. Any stale package rebuilds the whole workspace (`npm run build`).
//
// Measured on the shared two-core machine this was written on: a no-op here takes 0.1 to 0.2 s
// (0.07 s of CPU); a no-op `tsc --incremental` (with its .tsbuildinfo) took 4.9 s (3.4 s of CPU),
// since it still loads the compiler and reads every source; a full build 10 to 23 s.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = [].concat(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).workspaces ?? []).map((p) => join(ROOT, p));
const SHARED_INPUTS = ['tsconfig.base.json', join('node_modules', 'typescript', 'package.json')];

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.isFile()) yield path;
  }
}

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Why the build is stale, or `undefined` when it is up to date. */
function staleness() {
  for (const dir of PACKAGES) {
    const reason = packageStaleness(join(dir, 'src'), join(dir, 'dist'), [join(dir, 'tsconfig.json'), ...SHARED_INPUTS.map((f) => join(ROOT, f))]);
    if (reason !== undefined) return reason;
  }
  return undefined;
}

/** Why one package's build is stale, or `undefined`. */
function packageStaleness(SRC, DIST, configInputs) {
  let newest = { path: '', ms: -Infinity };
  let oldest = { path: '', ms: Infinity };
  for (const path of files(SRC)) {
    const ms = mtime(path) ?? Infinity;
    if (ms > newest.ms) newest = { path, ms };
    if (!path.endsWith('.ts') || path.endsWith('.d.ts')) continue;
    const out = join(DIST, relative(SRC, path)).replace(/\.ts$/, '.js');
    const outMs = mtime(out);
    if (outMs === undefined) return `${relative(ROOT, out)} is missing`;
    if (outMs < oldest.ms) oldest = { path: out, ms: outMs };
  }
  for (const path of configInputs) {
    const ms = mtime(path);
    if (ms !== undefined && ms > newest.ms) newest = { path, ms };
  }
  if (oldest.ms === Infinity) return `${relative(ROOT, SRC)} has no sources`;
  if (newest.ms > oldest.ms) return `${relative(ROOT, newest.path)} is newer than ${relative(ROOT, oldest.path)}`;
  return undefined;
}

/** Some existing output of a source, or `undefined`. */
function firstOutput() {
  for (const dir of PACKAGES) {
    const SRC = join(dir, 'src');
    for (const path of files(SRC)) {
      if (!path.endsWith('.ts') || path.endsWith('.d.ts')) continue;
      const out = join(dir, 'dist', relative(SRC, path)).replace(/\.ts$/, '.js');
      if (mtime(out) !== undefined) return out;
    }
  }
  return undefined;
}

const check = process.argv.includes('--check');
const unknown = process.argv.slice(2).filter((a) => a !== '--check');
if (unknown.length > 0) {
  process.stderr.write(`build-if-stale: unknown argument ${JSON.stringify(unknown[0])} (the only option is --check)\n`);
  process.exit(2);
}
const reason = staleness();
if (reason === undefined) process.exit(0);
if (check) {
  process.stdout.write(`stale: ${reason}\n`);
  process.exit(1);
}
process.stderr.write(`build-if-stale: ${reason}: npm run build\n`);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const built = spawnSync(npm, ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit', shell: process.platform === 'win32' });
if (built.error !== undefined) {
  process.stderr.write(`build-if-stale: could not run npm: ${built.error.message}\n`);
  process.exit(1);
}
if (built.status !== 0) {
  // tsc emits despite type errors: mark the build stale, so the next run builds (and reports) again.
  const output = firstOutput();
  if (output !== undefined) utimesSync(output, 0, 0);
  process.exit(built.status ?? 1);
}
