/**
 * The package as a user installs it: `npm pack` of this checkout, unpacked
 * into a consumer project's node_modules, with the packages the consumer
 * resolves besides it linked from this repository's node_modules. Shared by
 * the packed-types test and the docs' examples test (integration tier: each
 * packs once per file, about 1.5 s).
 *
 * Needs a built dist/ (`npm test` builds first).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { LIB_DIR, ROOT } from './paths.js';

export { ROOT };
/** The repository's own compiler (TypeScript 5.9, pinned in package.json). */
export const TSC_5 = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** The TypeScript 7 release the published types are held to. */
export const TYPESCRIPT_7 = '7.0.2';

/**
 * Packs one of this repository's packages (default the library,
 * packages/ratecontract) and unpacks it into `<dir>/node_modules/<its
 * name>`; returns the tarball's path.
 */
export function packInto(dir: string, packageDir: string = LIB_DIR): string {
  if (!existsSync(join(packageDir, 'dist'))) throw new Error(`${packageDir}/dist is missing: run \`npm run build\` first`);
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: packageDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 120_000 });
  const packed = (JSON.parse(out) as Array<{ filename: string; name: string }>)[0];
  const tarball = join(dir, packed?.filename ?? '');
  const pkg = join(dir, 'node_modules', packed?.name ?? 'ratecontract');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', pkg, '--strip-components=1']);
  return tarball;
}

/** Links each named package (scoped names too) from this repository's node_modules into `<dir>/node_modules`; a name not installed here is skipped. */
export function linkFromRepo(dir: string, names: readonly string[]): void {
  for (const name of names) {
    const from = join(ROOT, 'node_modules', name);
    const to = join(dir, 'node_modules', name);
    if (!existsSync(from) || existsSync(to)) continue;
    mkdirSync(dirname(to), { recursive: true });
    symlinkSync(from, to, 'dir');
  }
}

/** A fresh temporary directory with a `package.json` of an ESM project. */
export function tempProject(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'consumer', private: true, type: 'module' })}\n`);
  return dir;
}

/**
 * The TypeScript 7 compiler's `tsc` script, installed with npm once into
 * node_modules/.cache (where a later run finds it) and never into the
 * repository's own dependencies. Throws, saying why, when npm cannot install it.
 */
export function typescript7(): string {
  const home = join(ROOT, 'node_modules', '.cache', 'ratecontract-tests', `typescript-${TYPESCRIPT_7}`);
  const bin = join(home, 'node_modules', 'typescript', 'bin', 'tsc');
  const installed = (): boolean => existsSync(bin) && (JSON.parse(readFileSync(join(home, 'node_modules', 'typescript', 'package.json'), 'utf8')) as { version: string }).version === TYPESCRIPT_7;
  if (installed()) return bin;
  const staging = `${home}.${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const r = spawnSync('npm', ['install', '--prefix', staging, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `typescript@${TYPESCRIPT_7}`], { encoding: 'utf8', timeout: 180_000 });
  if (r.status !== 0) throw new Error(`npm could not install typescript@${TYPESCRIPT_7} (exit ${String(r.status)}): ${r.stderr}`);
  try {
    renameSync(staging, home);
  } catch {
    // Another test file installed it at the same time: use that one.
    rmSync(staging, { recursive: true, force: true });
  }
  if (!installed()) throw new Error(`typescript@${TYPESCRIPT_7} is not at ${bin} after npm install`);
  return bin;
}

export interface TscRun {
  readonly status: number | null;
  readonly output: string;
}

/** Runs a `tsc` script with node in `cwd`. */
export function runTsc(tsc: string, args: readonly string[], cwd: string): TscRun {
  const r = spawnSync(process.execPath, [tsc, ...args], { cwd, encoding: 'utf8', timeout: 180_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}${r.error === undefined ? '' : String(r.error)}` };
}
