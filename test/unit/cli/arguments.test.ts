import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, STACK_LINE } from './helpers.js';

/**
 * The command line as a user meets it (the CLI's run, in-process): every subcommand refuses an
 * unknown option and a stray argument in the same words (from
 * src/cli/args.ts), hints the option a near-miss meant, and the commands
 * that read one contract take it as an argument.
 */

const CONFIG_FIXTURES = fileURLToPath(new URL('../config/fixtures/', import.meta.url));
const CLI_FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

let dir = '';
let rlsDir = '';
let log = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rc-args-'));
  rlsDir = join(dir, 'rls');
  await (await import('node:fs/promises')).mkdir(rlsDir);
  await writeFile(join(rlsDir, 'd.yaml'), 'domain: d\ndescriptors:\n  - key: plain\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n');
  log = join(dir, 'access.log');
  await writeFile(log, '203.0.113.9 - - [01/Dec/2026:10:00:00 +0000] "POST /login HTTP/1.1" 200 12 "-" "curl/8"\n');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every subcommand: a near-miss of one of its options, and arguments past what it takes. */
const COMMANDS = [
  { name: 'check', nearMiss: '--confg', meant: '--config', stray: ['good/issue-example.yaml', 'stray.yaml'] },
  { name: 'audit', nearMiss: '--agaisnt', meant: '--against', stray: ['good/issue-example.yaml', 'stray.yaml'] },
  { name: 'replay', nearMiss: '--lgo', meant: '--log', stray: ['good/issue-example.yaml', 'stray.yaml'] },
  { name: 'simulate', nearMiss: '--limt', meant: '--limit', stray: ['stray.yaml'] },
  { name: 'serve', nearMiss: '--uptream', meant: '--upstream', stray: ['stray.yaml'] },
  { name: 'rls', nearMiss: '--grcp-port', meant: '--grpc-port', stray: ['stray.yaml'] },
] as const;

describe.each(COMMANDS)('ratecontract $name: mistakes on the command line', ({ name, nearMiss, meant, stray }) => {
  it('an unknown option: one line naming it, the usage, exit 2, no stack', async () => {
    const r = await runCli([name, '--bogus'], { cwd: CONFIG_FIXTURES });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')[0]).toBe(`ratecontract ${name}: unknown option --bogus`);
    expect(r.stderr).toContain(`usage: ratecontract ${name}`);
    expect(r.stderr).not.toMatch(STACK_LINE);
  });

  it('a near-miss of an option: the same line with a did-you-mean hint', async () => {
    const r = await runCli([name, nearMiss, 'x'], { cwd: CONFIG_FIXTURES });
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(`ratecontract ${name}: unknown option ${nearMiss}; did you mean ${meant}?`);
  });

  it('a single-dash long option: hinted to its two-dash form', async () => {
    const r = await runCli([name, `-${meant.slice(2)}`, 'x'], { cwd: CONFIG_FIXTURES });
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(`ratecontract ${name}: unknown option -${meant.slice(2)}; did you mean ${meant}?`);
  });

  it('an argument past what it takes: "unexpected argument", the usage, exit 2', async () => {
    const r = await runCli([name, ...stray], { cwd: CONFIG_FIXTURES });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const first = r.stderr.split('\n')[0] ?? '';
    expect(first.startsWith(`ratecontract ${name}: unexpected argument "stray.yaml"`), first).toBe(true);
    expect(r.stderr).not.toContain('unknown option');
    expect(r.stderr).toContain(`usage: ratecontract ${name}`);
    expect(r.stderr).not.toMatch(STACK_LINE);
  });
});

describe('a stray word that is an option without its dashes is hinted', () => {
  it('simulate json: did you mean --json?', async () => {
    const r = await runCli(['simulate', 'json']);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe('ratecontract simulate: unexpected argument "json"; did you mean --json?');
  });
});

describe('an unknown command is hinted too', () => {
  it.each([
    ['chek', 'unknown command "chek"; did you mean "check"?'],
    ['simlate', 'unknown command "simlate"; did you mean "simulate"?'],
    ['--verison', 'unknown command "--verison"; did you mean "--version"?'],
    ['nonsense', 'unknown command "nonsense"'],
  ])('%s', async (word, line) => {
    const r = await runCli([word]);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(`ratecontract: ${line}`);
  });
});

describe('the contract file as an argument: check FILE, audit FILE, replay FILE', () => {
  it('check FILE is check --config FILE', async () => {
    const positional = await runCli(['check', 'good/issue-example.yaml'], { cwd: CONFIG_FIXTURES });
    const option = await runCli(['check', '--config', 'good/issue-example.yaml'], { cwd: CONFIG_FIXTURES });
    expect(positional).toEqual(option);
    expect(positional.code).toBe(0);
    expect(positional.stdout).toMatch(/^good\/issue-example\.yaml: ok: 4 limits/);
  });

  it('check FILE reports an invalid file as --config does: exit 2 and its error line', async () => {
    const r = await runCli(['check', 'bad/window-typo.yaml'], { cwd: CONFIG_FIXTURES });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^bad\/window-typo\.yaml: limits\[0\]\.window: "15x" is not a duration/);
  });

  it('the same file both ways is accepted; two different files are refused naming both', async () => {
    const same = await runCli(['check', 'good/issue-example.yaml', '--config', './good/issue-example.yaml'], { cwd: CONFIG_FIXTURES });
    expect(same.code, same.stderr).toBe(0);
    const differ = await runCli(['check', 'good/issue-example.yaml', '--config', 'bad/window-typo.yaml'], { cwd: CONFIG_FIXTURES });
    expect(differ.code).toBe(2);
    expect(differ.stderr.split('\n')[0]).toBe('ratecontract check: two files given: "good/issue-example.yaml" (FILE) and --config "bad/window-typo.yaml"; give one');
    expect(differ.stderr).toContain('usage: ratecontract check [options] [FILE]');
  });

  it('audit FILE is audit --config FILE, with --against too', async () => {
    const positional = await runCli(['audit', 'audit-diff/after.yaml', '--against', 'audit-diff/before.yaml', '--json'], { cwd: CLI_FIXTURES });
    const option = await runCli(['audit', '--config', 'audit-diff/after.yaml', '--against', 'audit-diff/before.yaml', '--json'], { cwd: CLI_FIXTURES });
    expect(positional.code).toBe(0);
    expect(positional.stderr).toBe('');
    expect(JSON.parse(positional.stdout)).toEqual(JSON.parse(option.stdout));
  });

  it('audit --rls DIR is audit --rls --config DIR', async () => {
    const r = await runCli(['audit', '--rls', rlsDir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('RC_AUDIT_DEFAULT_PURPOSE');
    const none = await runCli(['audit', '--rls']);
    expect(none.code).toBe(2);
    expect(none.stderr.split('\n')[0]).toBe('ratecontract audit: --rls needs a config: audit --rls FILE|DIR');
  });

  it('replay FILE --log LOG is replay --config FILE --log LOG', async () => {
    const contract = join(CLI_FIXTURES, 'audit', 'safe.yaml');
    const positional = await runCli(['replay', contract, '--log', log, '--json']);
    expect(positional.code, positional.stderr).toBe(0);
    const doc = JSON.parse(positional.stdout) as { contract: { config: string }; log: { records: number } };
    expect(doc.contract.config).toBe(contract);
    expect(doc.log.records).toBe(1);
  });

  it('the short -c is not an option (options are long; FILE alone is the short form)', async () => {
    const r = await runCli(['check', '-c', 'good/issue-example.yaml'], { cwd: CONFIG_FIXTURES });
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe('ratecontract check: unknown option -c');
  });
});
