/**
 * The docs, run as written: every fenced example of README.md and docs/ is
 * type-checked against the packed package, run, checked by the CLI, or
 * marked a fragment (the convention: docs/README.md; the plan of each kind:
 * test/docs/blocks.ts). A failing or unmarked example fails its test, named
 * by file and line.
 *
 * One consumer project for the whole file: `npm pack`, unpacked into a temp
 * folder with the package's dependencies and the frameworks and clients the
 * examples import linked from this repository; the ts/js examples are
 * type-checked in one tsc run (`--strict`, NodeNext, the flags of `tsc
 * --init`), the rest run one by one. A control page with a broken example
 * of each kind goes through the same pipeline and must fail, at its lines.
 *
 * Needs a built dist/ (`npm test` builds first).
 */
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linkFromRepo, packInto, ROOT, runTsc, tempProject, TSC_5 } from '../../helpers/packed.js';
import { CLI_DIR, LIB_DIR } from '../../helpers/paths.js';
import { extractBlocks, planOf, where, type DocBlock } from '../../unit/docs/blocks.js';

/** Every Markdown page the examples come from, repository-relative, sorted. */
function pages(): string[] {
  const out = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) out.push(path);
    }
  };
  walk('docs');
  return out;
}

/** A page that must fail, one block of each kind, to show that the checks can. */
const CONTROL_PAGE = 'test/docs/control.md';
const CONTROL = [
  '```ts', //                                        1
  "import { createLimiter } from 'ratecontract';", // 2
  "createLimiter({ limits: [{ name: 'x', purpose: 'abuse', limit: 'five', window: '1m' }] });", // 3
  '```', //                                          4
  '```yaml', //                                      5
  'limits: []', //                                   6
  '```', //                                          7
  '```text', //                                      8
  'output of something', //                          9
  '```', //                                          10
  '```sh', //                                        11
  'ratecontract check --config nope.yaml', //        12
  '```', //                                          13
].join('\n');

const blocks: DocBlock[] = [...pages().flatMap((page) => extractBlocks(page, readFileSync(join(ROOT, page), 'utf8'))), ...extractBlocks(CONTROL_PAGE, CONTROL)];
const control = (b: DocBlock): boolean => b.file === CONTROL_PAGE;

/** What the examples import besides the package, and what the package's CLI needs at run time. */
const LINKED = [
  ...[LIB_DIR, CLI_DIR].flatMap((d) => Object.keys((JSON.parse(readFileSync(join(d, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies)).filter((n) => n !== 'ratecontract'),
  '@types/node', 'undici-types', 'express', '@types/express', '@types/express-serve-static-core', '@types/serve-static', '@types/qs', '@types/range-parser',
  '@types/send', '@types/mime', '@types/http-errors', '@types/body-parser', '@types/connect', 'fastify', 'hono', '@hono/node-server', 'ioredis', 'redis',
  '@opentelemetry/api', 'vitest',
];

/** The compiler options: strict NodeNext, with the stricter flags `tsc --init` writes. */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022', lib: ['ES2023'], module: 'NodeNext', moduleResolution: 'NodeNext', moduleDetection: 'force', strict: true,
    noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true, verbatimModuleSyntax: true, isolatedModules: true,
    allowJs: true, checkJs: true, noEmit: true, skipLibCheck: true, types: ['node'],
  },
};

let dir = '';
/** Type errors per block file, already mapped to the page's lines. */
const typeErrors = new Map<DocBlock, string[]>();
const files = new Map<DocBlock, { path: string; offset: number }>();

function slug(b: DocBlock): string {
  return `${b.file.replace(/[^A-Za-z0-9]+/g, '_')}_L${String(b.line)}`;
}

beforeAll(() => {
  dir = tempProject('rc-docs-');
  packInto(dir);
  packInto(dir, CLI_DIR);
  linkFromRepo(dir, LINKED);
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  const bin = join(dir, 'node_modules', '.bin', 'ratecontract');
  writeFileSync(bin, '#!/bin/sh\nexec node "$(dirname "$0")/../@ratecontract/cli/dist/cli/main.js" "$@"\n');
  chmodSync(bin, 0o755);
  // Commands in the docs may write into docs/ (the simulate chart): a copy, compared with the original after each run.
  cpSync(join(ROOT, 'docs'), join(dir, 'docs'), { recursive: true });
  mkdirSync(join(dir, 'blocks'));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  for (const b of blocks) {
    const plan = planOf(b);
    if (plan.kind !== 'typecheck') continue;
    const prelude = b.prelude === undefined ? '' : `${b.prelude}\n`;
    const path = join(dir, 'blocks', `${slug(b)}.${plan.ext}`);
    writeFileSync(path, `${prelude}${b.body}\n`);
    files.set(b, { path, offset: prelude === '' ? 0 : prelude.split('\n').length - 1 });
    typeErrors.set(b, []);
  }
  // tsc skips every semantic check while any file has a syntax error: a
  // second run leaves the files with syntax errors out.
  const byPath = new Map([...files].map(([b, f]) => [relative(dir, f.path), b]));
  let remaining = [...byPath.keys()];
  for (let pass = 0; pass < 2 && remaining.length > 0; pass++) {
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, files: remaining }, null, 2));
    const r = runTsc(TSC_5, ['-p', 'tsconfig.json', '--pretty', 'false'], dir);
    const broken = new Set<string>();
    let last: string[] | undefined;
    for (const line of r.output.split('\n')) {
      const m = /^(blocks\/[^(]+)\((\d+),(\d+)\): error TS(\d+): (.*)$/.exec(line);
      if (m === null) {
        if (last !== undefined && /^\s+\S/.test(line)) last.push(line.trim());
        else if (line.trim() !== '') throw new Error(`tsc said something about no example:\n${r.output}`);
        continue;
      }
      const path = m[1] ?? '';
      const b = byPath.get(path) as DocBlock;
      if (Number(m[4]) < 2000) broken.add(path);
      const at = Number(m[2]) - 1 - (files.get(b)?.offset ?? 0);
      const text = `${at < 0 ? `${where(b)} (its prelude)` : where(b, at)}: TS${m[4] ?? ''}: ${m[5] ?? ''}`;
      const list = typeErrors.get(b) as string[];
      if (!list.includes(text)) list.push(text);
      last = list;
    }
    remaining = remaining.filter((p) => broken.has(p) === false && (typeErrors.get(byPath.get(p) as DocBlock)?.length ?? 0) === 0);
    if (broken.size === 0) break;
  }
}, 300_000);

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

interface Ran {
  readonly status: number | null;
  readonly output: string;
}

/** Runs a command in the consumer project; past `timeoutMs` its whole process group is killed and it counts as failed. */
function run(command: string, args: readonly string[], timeoutMs = 60_000): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: dir,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PATH: `${join(dir, 'node_modules', '.bin')}:${process.env['PATH'] ?? ''}`, NO_COLOR: '1', npm_config_yes: 'false' },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => {
      output += `\n(killed after ${String(timeoutMs)} ms)`;
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, output: output.trim() });
    });
  });
}

const CLI = (): string => join(dir, 'node_modules', '@ratecontract', 'cli', 'dist', 'cli', 'main.js');

/** The failures of one block, each naming the page and line; empty when it holds. */
async function failuresOf(b: DocBlock): Promise<string[]> {
  const plan = planOf(b);
  switch (plan.kind) {
    case 'fragment':
      return [];
    case 'unmarked':
      return [`${where(b)}: a \`\`\`${b.lang === '' ? '' : b.lang} block is neither type-checked, run nor checked: mark it <!-- fragment: why --> (docs/README.md)`];
    case 'typecheck': {
      const errors = typeErrors.get(b) ?? [];
      if (errors.length > 0 || !plan.run) return errors;
      const file = files.get(b)?.path as string;
      const r = plan.ext === 'ts' ? await run(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), file]) : await run(process.execPath, [file]);
      return r.status === 0 ? [] : [`${where(b)}: run as written, exited ${String(r.status)}:\n${r.output}`];
    }
    case 'contract':
    case 'rls-config': {
      const file = join(dir, `${slug(b)}.yaml`);
      writeFileSync(file, `${b.body}\n`);
      const steps = plan.kind === 'contract' ? [['check', '--config', file], ['audit', '--config', file]] : [['audit', '--rls', '--config', file]];
      const out: string[] = [];
      for (const args of steps) {
        const r = await run(process.execPath, [CLI(), ...args]);
        if (r.status !== 0) out.push(`${where(b)}: \`ratecontract ${args.slice(0, -1).join(' ')} FILE\` exited ${String(r.status)}:\n${r.output}`);
      }
      return out;
    }
    case 'shell': {
      const r = await run('bash', ['-c', `set -eo pipefail\n${b.body}`]);
      const out = r.status === 0 ? [] : [`${where(b)}: run as written, exited ${String(r.status)}:\n${r.output}`];
      for (const name of readdirSync(join(dir, 'docs'), { recursive: true, encoding: 'utf8' })) {
        const copy = join(dir, 'docs', name);
        let original: Buffer | undefined;
        try {
          original = readFileSync(join(ROOT, 'docs', name));
        } catch {
          continue;
        }
        if (!readFileSync(copy).equals(original)) {
          out.push(`${where(b)}: the command wrote docs/${name}, and it differs from the committed one`);
          cpSync(join(ROOT, 'docs', name), copy);
        }
      }
      return out;
    }
  }
}

describe('every fenced example of README.md and docs/', () => {
  it('the pages have examples of every kind the suite checks', () => {
    const kinds = new Set(blocks.filter((b) => !control(b)).map((b) => planOf(b).kind));
    expect([...kinds].sort()).toEqual(['contract', 'fragment', 'rls-config', 'shell', 'typecheck']);
  });

  it.each(blocks.filter((b) => !control(b)).map((b) => [`${where(b)} (${planOf(b).kind}${b.run ? ', run' : ''})`, b] as const))('%s', async (_name, b) => {
    const failures = await failuresOf(b);
    expect(failures.join('\n\n')).toBe('');
  }, 120_000);
});

describe('the checks can fail (a control page with a broken example of each kind)', () => {
  const byLine = (line: number): DocBlock => blocks.find((b) => control(b) && b.line === line) as DocBlock;

  it('a type error is reported at its page line', async () => {
    const failures = await failuresOf(byLine(1));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/^test\/docs\/control\.md:3: TS2322: /);
  });

  it('a contract that `check` refuses is reported', async () => {
    const failures = await failuresOf(byLine(5));
    expect(failures[0]).toMatch(/^test\/docs\/control\.md:5: `ratecontract check --config FILE` exited 2:\n.*routes: is required/);
  });

  it('an unmarked block of another kind is reported', async () => {
    expect(await failuresOf(byLine(8))).toEqual([expect.stringMatching(/^test\/docs\/control\.md:8: a ```text block is neither type-checked, run nor checked/)]);
  });

  it('a command that fails is reported with its exit code and output', async () => {
    const failures = await failuresOf(byLine(11));
    expect(failures[0]).toMatch(/^test\/docs\/control\.md:11: run as written, exited 2:\n.*nope\.yaml/s);
  });
});
