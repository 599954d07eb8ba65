/**
 * `npm run serve` and `npm run simulate` build only when the sources are newer
 * than the build (scripts/build-if-stale.js). Tried on a small project of the
 * same layout (a workspace package with src/, dist/ and a tsconfig.json extending tsconfig.base.json; the repository's compiler),
 * through `npm run serve` as a user runs it: whether tsc ran is read from what
 * it leaves behind (the outputs' modification times), never from wall time.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers.js';

let dir: string;

function run(args: readonly string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(args[0] as string, args.slice(1), { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const npmServe = (): ReturnType<typeof run> => run(['npm', 'run', 'serve', '--silent']);
const check = (): ReturnType<typeof run> => run([process.execPath, 'scripts/build-if-stale.js', '--check']);

/** Every file under dist/ with its modification time in nanoseconds (a rewrite by tsc changes it). */
function distTimes(): Map<string, bigint> {
  const out = new Map<string, bigint>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(relative(dir, p), statSync(p, { bigint: true }).mtimeNs);
    }
  };
  walk(join(dir, PKG, 'dist'));
  return out;
}

/** Sets a file's modification time `secondsAgo` in the past. */
function setAge(path: string, secondsAgo: number): void {
  const t = Date.now() / 1000 - secondsAgo;
  utimesSync(join(dir, path), t, t);
}

/** The probe's one workspace package. */
const PKG = 'packages/probe';
const INPUTS = [`${PKG}/src/main.ts`, `${PKG}/src/sub/who.ts`, `${PKG}/src/sub/data.lua`, `${PKG}/tsconfig.json`, 'tsconfig.base.json'];

/** Ages the inputs by ten minutes and the build by two, then marks `path` as changed after it (yet in the past, so a build now is newer). */
function changed(path: string): void {
  for (const f of INPUTS) unchanged(f);
  for (const f of distTimes().keys()) setAge(f, 120);
  setAge(path, 60);
}

/** Puts an input back to before the build. */
function unchanged(path: string): void {
  setAge(path, 600);
}

describe('scripts/build-if-stale.js behind `npm run serve`', () => {
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rc-stale-'));
    mkdirSync(join(dir, 'scripts'));
    mkdirSync(join(dir, PKG, 'src', 'sub'), { recursive: true });
    copyFileSync(join(ROOT, 'scripts', 'build-if-stale.js'), join(dir, 'scripts', 'build-if-stale.js'));
    // The repository's own compiler, as `npm ci` installed it.
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'stale-probe', private: true, type: 'module', workspaces: [PKG], scripts: { build: `tsc -p ${PKG}`, serve: `node scripts/build-if-stale.js && node ${PKG}/dist/main.js` } }),
    );
    writeFileSync(join(dir, 'tsconfig.base.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, types: [], skipLibCheck: true } }));
    writeFileSync(join(dir, PKG, 'package.json'), JSON.stringify({ name: 'probe', private: true, type: 'module' }));
    writeFileSync(join(dir, PKG, 'tsconfig.json'), JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { outDir: 'dist', rootDir: 'src' }, include: ['src'] }));
    writeFileSync(join(dir, PKG, 'src', 'main.ts'), "import { who } from './sub/who.js';\nconsole.log(`served by ${who}`);\n");
    writeFileSync(join(dir, PKG, 'src', 'sub', 'who.ts'), "export const who: string = 'v1';\n");
    writeFileSync(join(dir, PKG, 'src', 'sub', 'data.lua'), '-- not compiled, but an input all the same\n');
    // A checkout from ten minutes ago: the tests below age the build and change one input at a time.
    for (const f of INPUTS) unchanged(f);
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('the repository: serve and simulate go through it, and the script is silent when the build is current', () => {
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.serve).toBe('node scripts/build-if-stale.js && node packages/cli/dist/cli/main.js serve');
    expect(scripts.simulate).toBe('node scripts/build-if-stale.js && node packages/cli/dist/cli/main.js simulate');
    expect(scripts.build).toBe('tsc -p packages/ratecontract && tsc -p packages/cli');
  });

  it('builds when there is no build, then runs', () => {
    const first = npmServe();
    expect(first.stderr).toContain(`build-if-stale: ${PKG}/dist/main.js is missing: npm run build`);
    expect(first.code).toBe(0);
    expect(first.stdout.trim()).toBe('served by v1');
    expect(existsSync(join(dir, PKG, 'dist', 'sub', 'who.js'))).toBe(true);
  });

  it('a second run with the build up to date does not run tsc: no output of dist/ is rewritten', () => {
    const before = distTimes();
    const second = npmServe();
    expect(second.code).toBe(0);
    expect(second.stderr).toBe('');
    expect(second.stdout.trim()).toBe('served by v1');
    expect(distTimes()).toEqual(before);
    expect(check()).toMatchObject({ code: 0, stdout: '' });
  });

  it('rebuilds when a source is newer than the build, and only then', () => {
    writeFileSync(join(dir, PKG, 'src', 'sub', 'who.ts'), "export const who: string = 'v2';\n");
    changed(`${PKG}/src/sub/who.ts`);
    expect(check()).toMatchObject({ code: 1, stdout: expect.stringMatching(/^stale: packages\/probe\/src\/sub\/who\.ts is newer than packages\/probe\/dist\/\S+\.js\n$/) as unknown });
    const before = distTimes();
    const r = npmServe();
    expect(r.stderr).toContain(`build-if-stale: ${PKG}/src/sub/who.ts is newer than`);
    expect(r.stdout.trim()).toBe('served by v2');
    // tsc rewrote every output, the one of the unchanged main.ts too.
    expect(distTimes().get(`${PKG}/dist/main.js`)).not.toBe(before.get(`${PKG}/dist/main.js`));
    expect(check()).toMatchObject({ code: 0, stdout: '' });
  });

  it('is stale when a non-TypeScript file under src/ or a tsconfig changed, or an output is missing', () => {
    changed(`${PKG}/src/sub/data.lua`);
    expect(check()).toMatchObject({ code: 1, stdout: expect.stringMatching(/^stale: packages\/probe\/src\/sub\/data\.lua is newer than packages\/probe\/dist\/\S+\.js\n$/) as unknown });
    unchanged(`${PKG}/src/sub/data.lua`);
    expect(check()).toMatchObject({ code: 0, stdout: '' });
    changed('tsconfig.base.json');
    expect(check().stdout).toMatch(/^stale: tsconfig\.base\.json is newer than packages\/probe\/dist\/\S+\.js\n$/);
    unchanged('tsconfig.base.json');
    changed(`${PKG}/tsconfig.json`);
    expect(check().stdout).toMatch(/^stale: packages\/probe\/tsconfig\.json is newer than packages\/probe\/dist\/\S+\.js\n$/);
    unchanged(`${PKG}/tsconfig.json`);
    expect(check().code).toBe(0);
    const who = readFileSync(join(dir, PKG, 'dist', 'sub', 'who.js'));
    rmSync(join(dir, PKG, 'dist', 'sub', 'who.js'));
    expect(check().stdout).toBe(`stale: ${PKG}/dist/sub/who.js is missing\n`);
    writeFileSync(join(dir, PKG, 'dist', 'sub', 'who.js'), who);
    expect(check().code).toBe(0);
  });

  it('ignores what a deleted source left in dist/', () => {
    writeFileSync(join(dir, PKG, 'dist', 'gone.js'), '');
    utimesSync(join(dir, PKG, 'dist', 'gone.js'), 0, 0);
    expect(check()).toMatchObject({ code: 0, stdout: '' });
  });

  it('a build that fails (tsc emits anyway) stays stale, so the next run builds and reports again', () => {
    writeFileSync(join(dir, PKG, 'src', 'sub', 'who.ts'), "export const who: number = 'not a number';\n");
    changed(`${PKG}/src/sub/who.ts`);
    const failed = npmServe();
    expect(failed.code).not.toBe(0);
    expect(failed.stdout + failed.stderr).toContain('TS2322');
    expect(failed.stdout).not.toContain('served by');
    expect(check()).toMatchObject({ code: 1, stdout: expect.stringMatching(/^stale: packages\/probe\/src\/sub\/who\.ts is newer than packages\/probe\/dist\/\S+\.js\n$/) as unknown });
  });

  it('refuses an unknown argument', () => {
    const r = run([process.execPath, 'scripts/build-if-stale.js', '--force']);
    expect(r).toMatchObject({ code: 2, stderr: 'build-if-stale: unknown argument "--force" (the only option is --check)\n' });
  });
});
