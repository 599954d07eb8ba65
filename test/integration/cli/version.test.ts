import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_DIR, ROOT } from '../../helpers/paths.js';
import { runProcess } from './helpers.js';

const pkg = JSON.parse(readFileSync(join(CLI_DIR, 'package.json'), 'utf8')) as { version: string };

describe('ratecontract --version, the built command', () => {
  it.each(['--version', '-V'])('%s prints the version of package.json on stdout and exits 0', async (flag) => {
    const r = await runProcess([flag]);
    expect(r).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it('reads package.json at run time: the built CLI beside another package.json says that version', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rc-version-'));
    try {
      await cp(join(CLI_DIR, 'dist'), join(dir, 'dist'), { recursive: true });
      await writeFile(join(dir, 'package.json'), JSON.stringify({ name: '@ratecontract/cli', version: '9.8.7-test.1', type: 'module' }));
      // The CLI's imports resolve from node_modules; a link keeps the copy small.
      await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
      const r = spawnSync(process.execPath, [join(dir, 'dist', 'cli', 'main.js'), '--version'], { encoding: 'utf8', timeout: 30_000 });
      expect([r.status, r.stdout, r.stderr]).toEqual([0, '9.8.7-test.1\n', '']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('takes no argument: exit status 2', async () => {
    const extra = await runProcess(['--version', 'check']);
    expect([extra.code, extra.stderr.split('\n')[0]]).toEqual([2, 'ratecontract: --version takes no argument, got "check"']);
  });
});
