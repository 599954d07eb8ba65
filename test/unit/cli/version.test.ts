import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_DIR } from '../../helpers/paths.js';
import { runCli } from './helpers.js';

/** `--version` through the CLI's run; the built command beside another package.json is in test/integration/cli/version.test.ts. */

const pkg = JSON.parse(readFileSync(join(CLI_DIR, 'package.json'), 'utf8')) as { version: string };

describe('ratecontract --version', () => {
  it.each(['--version', '-V'])('%s prints the version of package.json on stdout and exits 0', async (flag) => {
    const r = await runCli([flag]);
    expect(r).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it('takes no argument, and the command list names it', async () => {
    const extra = await runCli(['--version', 'check']);
    expect([extra.code, extra.stderr.split('\n')[0]]).toEqual([2, 'ratecontract: --version takes no argument, got "check"']);
    const r = await runCli(['help']);
    expect(r.stdout).toMatch(/^ {2}-V, --version {2,}print the version/m);
  });
});
