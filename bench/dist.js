// Where the benchmarks load ratecontract from. The drivers (run-redis.js,
// run-http.js) compile src/ into a private directory first and point every
// child process at it with RATECONTRACT_DIST_DIR, so a run measures one
// build from start to end even when something else rebuilds ../dist
// meanwhile (this machine is shared). Without the variable: ../dist/.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const envDir = process.env.RATECONTRACT_DIST_DIR;

/** URL of the dist directory in use (with a trailing slash). */
export const distDir = envDir ? pathToFileURL(envDir.endsWith('/') ? envDir : `${envDir}/`) : new URL('../packages/ratecontract/dist/', import.meta.url);

/** Imports a module of the build, e.g. fromDist('stores/redis/index.js'). */
export const fromDist = (rel) => import(new URL(rel, distDir).href);

/** HEAD's short hash, plus a note when src/ has uncommitted changes. */
export function revision() {
  try {
    const git = (...args) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim();
    const dirty = git('status', '--porcelain', '--', 'packages/ratecontract/src').length > 0;
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' + uncommitted changes in src/' : ''}`;
  } catch {
    return 'unknown';
  }
}

/**
 * Compiles the library (../packages/ratecontract/src) into a fresh directory under
 * bench/results/tmp/ (inside the repository, so the build resolves
 * ratecontract's own dependencies from ../node_modules) and sets
 * RATECONTRACT_DIST_DIR for this process and its children. Returns
 * { dir, revision, cleanup }.
 */
export function privateBuild(log = () => {}) {
  const tmpRoot = fileURLToPath(new URL('./results/tmp/', import.meta.url));
  mkdirSync(tmpRoot, { recursive: true });
  const dir = mkdtempSync(join(tmpRoot, 'dist-'));
  const before = revision();
  log(`compiling src/ (${before}) into ${dir}`);
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'packages/ratecontract/tsconfig.json'), '--outDir', dir, '--composite', 'false', '--incremental', 'false'], { stdio: 'inherit', timeout: 180_000 });
  const after = revision();
  process.env.RATECONTRACT_DIST_DIR = dir;
  return {
    dir,
    revision: before === after ? before : `${before} (src changed to ${after} while compiling: re-run for a clean record)`,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
