/**
 * Type-level tests against the packed tarball, as consumers see the package:
 * `npm pack`, unpack into a consumer folder's node_modules, and compile with
 * TypeScript 5 (the repository's tsc) and TypeScript 7 (installed with npm
 * into node_modules/.cache on first use):
 *
 * - test/types/consumer: a strict NodeNext consumer with its own context
 *   type. Its `@ts-expect-error` lines are the refusals the types must make
 *   (tsc fails on one that no longer errors). A negative control checks that
 *   the compile can fail, naming the missing field.
 * - test/types/every-entry: every entry under the configuration `tsc --init`
 *   of each version writes (run here, so a new default is seen), as written
 *   and with `skipLibCheck: false`. node-adapter.ts and frameworks.ts in a
 *   project with @types/node installed (the init config loads no @types on
 *   its own, so only what the program imports brings Node's types in);
 *   web.ts, the runtime-neutral entries, in one with no Node types anywhere.
 *
 * Needs a built dist/ (`npm test` builds first).
 */
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linkFromRepo, packInto, runTsc, tempProject, TSC_5, TYPESCRIPT_7, typescript7 } from '../../helpers/packed.js';

const CONSUMER = fileURLToPath(new URL('./consumer', import.meta.url));
const EVERY_ENTRY = fileURLToPath(new URL('./every-entry', import.meta.url));
/** What a Node consumer resolves besides the package: its runtime dependencies, Node's types and the frameworks' (with their optional peers). */
const NODE_LINKED = [
  'structured-headers', 'yaml', '@types/node', 'undici-types', 'hono', 'express', '@types/express', '@types/express-serve-static-core', '@types/serve-static',
  '@types/qs', '@types/range-parser', '@types/send', '@types/mime', '@types/http-errors', '@types/body-parser', '@types/connect', 'fastify',
  'prom-client', '@opentelemetry/api',
];
/** A consumer on another runtime: the runtime dependencies and Hono, no @types at all. */
const WEB_LINKED = ['structured-headers', 'yaml', 'hono'];

let nodeDir = '';
let webDir = '';
let tsc7 = '';
/** The compilers, by name; TypeScript 7's path is known once beforeAll has installed it. */
const COMPILERS = ['TypeScript 5.9', `TypeScript ${TYPESCRIPT_7}`] as const;
const compilerPath = (name: (typeof COMPILERS)[number]): string => (name === 'TypeScript 5.9' ? TSC_5 : tsc7);

beforeAll(() => {
  nodeDir = tempProject('rc-types-');
  packInto(nodeDir);
  linkFromRepo(nodeDir, NODE_LINKED);
  for (const f of readdirSync(CONSUMER)) cpSync(join(CONSUMER, f), join(nodeDir, f));
  webDir = tempProject('rc-types-web-');
  cpSync(join(nodeDir, 'node_modules', 'ratecontract'), join(webDir, 'node_modules', 'ratecontract'), { recursive: true });
  linkFromRepo(webDir, WEB_LINKED);
  tsc7 = typescript7();
}, 240_000);

afterAll(() => {
  for (const d of [nodeDir, webDir]) if (d !== '') rmSync(d, { recursive: true, force: true });
});

/** A folder of `project` with `file` and the tsconfig.json that `tsc --init` of `compiler` writes there. */
function initProject(project: string, name: string, compiler: string, file: string): string {
  const dir = join(project, name);
  mkdirSync(dir, { recursive: true });
  const init = runTsc(compiler, ['--init'], dir);
  expect(init.status, init.output).toBe(0);
  cpSync(join(EVERY_ENTRY, file), join(dir, file));
  return dir;
}

describe.each(COMPILERS)('the packed package under %s', (name) => {
  const index = COMPILERS.indexOf(name);
  const compiler = (): [string, string] => [name, compilerPath(name)];

  it('a strict NodeNext consumer: key functions, check() and every adapter get the user context type, and refuse what they must', () => {
    const [name, tsc] = compiler();
    const r = runTsc(tsc, ['-p', 'tsconfig.json'], nodeDir);
    expect(r.output, name).toBe('');
    expect(r.status, name).toBe(0);
  }, 180_000);

  it.each([
    ['node-adapter.ts', 'the node:http adapter alone, in a Node project with @types/node', 'node'],
    ['frameworks.ts', 'the Express and Fastify adapters and the metrics, in a Node project with their types', 'node'],
    ['web.ts', 'the runtime-neutral entries, in a project without any Node types', 'web'],
  ] as const)('%s: %s, under `tsc --init`\'s configuration as written and with skipLibCheck: false', (file, _label, where) => {
    const [name, tsc] = compiler();
    const project = where === 'node' ? nodeDir : webDir;
    for (const extra of [[], ['--skipLibCheck', 'false']]) {
      const dir = initProject(project, `init-${file}-${String(index)}-${String(extra.length)}`, tsc, file);
      const r = runTsc(tsc, ['-p', 'tsconfig.json', '--noEmit', ...extra], dir);
      expect(r.output, `${name} ${extra.join(' ')}`).toBe('');
      expect(r.status, `${name} ${extra.join(' ')}`).toBe(0);
    }
  }, 180_000);
});

describe('the packed types can fail', () => {
  it('negative control: a check without the required field is reported, naming it', () => {
    const source = readFileSync(join(nodeDir, 'typed-context.ts'), 'utf8').replace('  // @ts-expect-error a check without `account` is refused\n', '');
    writeFileSync(join(nodeDir, 'control.ts'), source);
    writeFileSync(join(nodeDir, 'tsconfig.control.json'), JSON.stringify({ extends: './tsconfig.json', files: ['control.ts'] }));
    const r = runTsc(TSC_5, ['-p', 'tsconfig.control.json'], nodeDir);
    expect(r.status).not.toBe(0);
    expect(r.output).toMatch(/control\.ts\(\d+,\d+\): error TS2345: .*Property 'account' is missing/s);
  }, 120_000);

  it('negative control: a type that became `any` is caught by the every-entry checks', () => {
    const dir = join(nodeDir, 'control-any');
    mkdirSync(dir, { recursive: true });
    expect(runTsc(TSC_5, ['--init'], dir).status).toBe(0);
    writeFileSync(join(dir, 'any.ts'), "type IsAny<T> = 0 extends 1 & T ? true : false;\nfunction notAny<T>(value: T, proof: IsAny<T> extends false ? true : never): void {\n  void [value, proof];\n}\nnotAny(JSON.parse('1'), true);\n");
    const r = runTsc(TSC_5, ['-p', 'tsconfig.json', '--noEmit'], dir);
    expect(r.status).not.toBe(0);
    expect(r.output).toMatch(/any\.ts\(5,\d+\): error TS2345/);
  }, 120_000);
});
