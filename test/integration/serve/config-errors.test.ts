import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from './helpers.js';

const FIXTURES = join(ROOT, 'test', 'unit', 'config', 'fixtures');
const bad = ['bad', 'semantic', 'syntax'].flatMap((d) => readdirSync(join(FIXTURES, d)).map((f) => relative(ROOT, join(FIXTURES, d, f))));

/** Runs `items` through `f`, `width` at a time. */
async function pooled<T, R>(items: readonly T[], width: number, f: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i] as T);
      }
    }),
  );
  return out;
}

describe('ratecontract serve: config errors', () => {
  it(`every bad file of the config corpus (${bad.length}): exit 2, one line naming the file, no stack, nothing listening`, async () => {
    expect(bad.length).toBeGreaterThan(40);
    const results = await pooled(bad, 3, (file) => runCli(['serve', '--config', file, '--port', '0', '--admin-port', '0']));
    results.forEach((r, i) => {
      const file = bad[i] as string;
      expect({ file, code: r.code }).toEqual({ file, code: 2 });
      const lines = r.stderr.split('\n').filter((l) => l !== '');
      expect({ file, lines: lines.length }).toEqual({ file, lines: 1 });
      expect(lines[0]?.startsWith(`${file}: `)).toBe(true);
      expect(r.stderr).not.toMatch(/^\s+at /m);
      expect(r.stdout).toBe('');
    });
  });

  it('a missing file: exit 2, one line', async () => {
    const r = await runCli(['serve', '--config', 'no/such/file.yaml', '--port', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('no/such/file.yaml: cannot read the file (ENOENT: no such file or directory)\n');
  });

  it.each([
    [['--port', 'eighty'], '--port must be an integer from 0 to 65535, got "eighty"'],
    [['--upstream', 'ftp://x'], '--upstream must be a http:// or https:// URL, got "ftp://x"'],
    [['--redis', 'http://127.0.0.1:6379'], '--redis must be a redis:// or rediss:// URL'],
    [['--upstream-timeout', '3 parsecs'], '--upstream-timeout'],
    [['--watch'], '--watch needs --config FILE'],
    [['--nope'], 'unknown option --nope'],
  ])('bad usage %j: exit 2 with the reason and the usage, no stack', async (args, message) => {
    const r = await runCli(['serve', ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toContain(`ratecontract serve: ${message}`);
    expect(r.stderr).toContain('usage: ratecontract serve [options]');
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });

  it('--help lists every flag', async () => {
    const r = await runCli(['serve', '--help']);
    expect(r.code).toBe(0);
    for (const flag of ['--config', '--port', '--host', '--upstream', '--upstream-timeout', '--admin-port', '--admin-host', '--redis', '--watch', '--ready-timeout', '--drain-timeout', '--log-level']) {
      expect(r.stdout).toContain(flag);
    }
  });
});
