/**
 * Type-level tests against the packed tarball, as a strict NodeNext
 * consumer sees the package: `npm pack`, unpack into a consumer folder's
 * node_modules, and compile test/types/consumer with the repository's tsc.
 * The consumer's `@ts-expect-error` lines are the refusals the types must
 * make (tsc fails on one that no longer errors). A negative control checks
 * that the compile can fail: the same check without its `@ts-expect-error`
 * is reported, naming the missing field.
 *
 * Needs a built dist/ (`npm test` builds first).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONSUMER = fileURLToPath(new URL('./consumer', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** What the consumer resolves besides the package: its runtime dependency and the frameworks' and Node's types. */
const LINKED = ['structured-headers', 'yaml', '@types/node', 'undici-types', 'hono', 'express', '@types/express', '@types/express-serve-static-core', '@types/serve-static', '@types/qs', '@types/range-parser', '@types/send', '@types/mime', '@types/http-errors', '@types/body-parser', '@types/connect', 'fastify'];

let dir = '';

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'index.d.ts'))) throw new Error('dist/ is missing: run `npm run build` first');
  dir = mkdtempSync(join(tmpdir(), 'rc-types-'));
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const tarball = join(dir, (JSON.parse(out) as Array<{ filename: string }>)[0]?.filename ?? '');
  const pkg = join(dir, 'node_modules', 'ratecontract');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', pkg, '--strip-components=1']);
  for (const name of LINKED) {
    const from = join(ROOT, 'node_modules', name);
    if (!existsSync(from)) continue;
    const to = join(dir, 'node_modules', name);
    mkdirSync(dirname(to), { recursive: true });
    symlinkSync(from, to, 'dir');
  }
  for (const f of readdirSync(CONSUMER)) cpSync(join(CONSUMER, f), join(dir, f));
}, 120_000);

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

function tsc(project: string): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [TSC, '-p', project], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('the packed package, as a strict NodeNext consumer types it', () => {
  it('gives key functions, check() and every adapter the user context type, and refuses what it must', () => {
    const r = tsc('tsconfig.json');
    expect(r.output).toBe('');
    expect(r.status).toBe(0);
  }, 120_000);

  it('negative control: a check without the required field is reported, naming it', () => {
    const source = readFileSync(join(dir, 'typed-context.ts'), 'utf8').replace('  // @ts-expect-error a check without `account` is refused\n', '');
    writeFileSync(join(dir, 'control.ts'), source);
    writeFileSync(join(dir, 'tsconfig.control.json'), JSON.stringify({ extends: './tsconfig.json', files: ['control.ts'] }));
    const r = tsc('tsconfig.control.json');
    expect(r.status).not.toBe(0);
    expect(r.output).toMatch(/control\.ts\(\d+,\d+\): error TS2345: .*Property 'account' is missing/s);
  }, 120_000);
});
