import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli, type CliRun } from './helpers.js';

const fixtures = fileURLToPath(new URL('../config/fixtures/', import.meta.url));

/** `ratecontract ...args` in-process (helpers.ts), from the config fixtures; the spawned command is in test/integration/cli. */
function run(...args: string[]): Promise<CliRun> {
  return runCli(args, { cwd: fixtures });
}

describe('ratecontract check (the CLI\'s run)', () => {
  it('a valid file: exit 0 and a one-line summary', async () => {
    const r = await run('check', '--config', 'good/issue-example.yaml');
    expect(r).toEqual({
      code: 0,
      stdout: 'good/issue-example.yaml: ok: 4 limits (3 abuse, 1 shedding), 2 routes (1 unlimited), 3 stores (2 redis, 1 memory), replicas discover\n',
      stderr: '',
    });
  });

  it('without --config: the built-in demo contract', async () => {
    const r = await run('check');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('(built-in demo): ok: 8 limits (5 abuse, 3 shedding), 4 routes (1 unlimited), 2 stores (2 memory), replicas 1\n');
  });

  it('an invalid file: exit 2 and exactly the error line, no stack trace', async () => {
    const r = await run('check', '--config', 'bad/window-typo.yaml');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`bad/window-typo.yaml: limits[0].window: "15x" is not a duration; expected one such as '500ms', '60s', '15m', '1h', '1d' or a number of milliseconds (line 3, column 42)\n`);
  });

  it.each([
    ['bad/onerror-typo.yaml', 'bad/onerror-typo.yaml: limits[0].onErorr: unknown option "onErorr"; did you mean "onError"? (line 3, column 55)'],
    ['semantic/unknown-limit.yaml', 'semantic/unknown-limit.yaml: routes[0].limits[0]: no limit named "otp-ipp"; did you mean "otp-ip"? (line 5, column 32)'],
    ['syntax/duplicate-key.yaml', 'syntax/duplicate-key.yaml: line 7, column 1: Map keys must be unique'],
  ])('%s: exit 2 with its line', async (file, line) => {
    const r = await run('check', '--config', file);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(line + '\n');
  });

  it('an unreadable file: exit 2, one line', async () => {
    const missing = await run('check', '--config', 'does-not-exist.yaml');
    expect(missing).toEqual({ code: 2, stdout: '', stderr: 'does-not-exist.yaml: cannot read the file (ENOENT: no such file or directory)\n' });
    const dir = mkdtempSync(join(tmpdir(), 'rc-check-'));
    const dirAsFile = await run('check', '--config', dir);
    expect(dirAsFile.code).toBe(2);
    expect(dirAsFile.stderr).toBe(`${dir}: cannot read the file (EISDIR: illegal operation on a directory)\n`);
    if (process.getuid?.() !== 0) {
      const locked = join(dir, 'locked.yaml');
      writeFileSync(locked, 'limits: []\nroutes: []\n');
      chmodSync(locked, 0);
      expect((await run('check', '--config', locked)).code).toBe(2);
    }
  });

  it('--help prints its usage and exits 0; an unknown option names itself and exits 2', async () => {
    const help = await run('check', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: ratecontract check \[options\] \[FILE\]\n/);
    const bogus = await run('check', '--bogus');
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toMatch(/^ratecontract check: unknown option --bogus\n/);
    const noFile = await run('check', '--config');
    expect(noFile.code).toBe(2);
    expect(noFile.stderr).toMatch(/^ratecontract check: option --config needs a value \(--config FILE\)\n/);
    const empty = await run('check', '--config=');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/^ratecontract check: --config needs a file name\n/);
  });
});
