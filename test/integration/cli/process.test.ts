import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, STACK_LINE } from './helpers.js';

/**
 * The `ratecontract` process as a user runs it (node dist/cli/main.js): what
 * only a process shows, once per kind. The exit status of success (0), of a
 * problem found (1) and of bad usage or input (2); stdout and stderr as
 * separate pipes; stdin as a real pipe, gzip included; a relative path from
 * the working directory. Every case and wording is tested in-process, through
 * the same `run`, in test/unit/cli.
 */

const CONFIG_FIXTURES = fileURLToPath(new URL('../../unit/config/fixtures/', import.meta.url));
const CLI_FIXTURES = fileURLToPath(new URL('../../unit/cli/fixtures/', import.meta.url));

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rc-cli-process-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the ratecontract process', () => {
  it('help: the command list on stdout, nothing on stderr, exit 0', async () => {
    const r = await runProcess(['help']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toMatch(/^usage: ratecontract <command>/);
    for (const name of ['serve', 'rls', 'simulate', 'replay', 'check', 'audit']) expect(r.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
  });

  it('an unknown command or option: exit 2, the message and usage on stderr, nothing on stdout, no stack trace', async () => {
    const command = await runProcess(['nonsense']);
    expect([command.code, command.stdout]).toEqual([2, '']);
    expect(command.stderr).toContain('unknown command "nonsense"');
    expect(command.stderr).toContain('commands:');
    const option = await runProcess(['simulate', '--limit', 'abc']);
    expect([option.code, option.stdout]).toEqual([2, '']);
    expect(option.stderr.split('\n')[0]).toBe('ratecontract simulate: --limit must be an integer from 1 to 100000, got "abc"');
    expect(option.stderr).toContain('usage: ratecontract simulate');
    for (const r of [command, option]) expect(r.stderr).not.toMatch(STACK_LINE);
  });

  it('check: a file relative to the working directory exits 0 with its summary; an invalid one exits 2 with its error line', async () => {
    const good = await runProcess(['check', 'good/issue-example.yaml'], { cwd: CONFIG_FIXTURES });
    expect(good).toEqual({
      code: 0,
      stdout: 'good/issue-example.yaml: ok: 4 limits (3 abuse, 1 shedding), 2 routes (1 unlimited), 3 stores (2 redis, 1 memory), replicas discover\n',
      stderr: '',
    });
    const bad = await runProcess(['check', '--config', 'bad/window-typo.yaml'], { cwd: CONFIG_FIXTURES });
    expect([bad.code, bad.stdout]).toEqual([2, '']);
    expect(bad.stderr).toMatch(/^bad\/window-typo\.yaml: limits\[0\]\.window: "15x" is not a duration/);
  });

  it('audit: exit 1 on an error finding, 0 on a safe contract, 1 on --fail-on weaken with the condition on stderr', async () => {
    const unsafe = await runProcess(['audit', '--json', '--config', 'audit/global-only.yaml'], { cwd: CLI_FIXTURES });
    expect([unsafe.code, unsafe.stderr]).toEqual([1, '']);
    expect((JSON.parse(unsafe.stdout) as { findings: Array<{ code: string }> }).findings.map((f) => f.code)).toContain('RC_AUDIT_GLOBAL_ONLY');
    const safe = await runProcess(['audit', '--config', 'audit/safe.yaml'], { cwd: CLI_FIXTURES });
    expect([safe.code, safe.stderr]).toEqual([0, '']);
    const gate = await runProcess(['audit', 'audit-diff/after.yaml', '--against', 'audit-diff/before.yaml', '--fail-on', 'weaken'], { cwd: CLI_FIXTURES });
    expect(gate.code).toBe(1);
    expect(gate.stderr).toMatch(/^ratecontract audit: \d+ of \d+ changes weaken the contract \(--fail-on weaken\)\n$/);
  });

  it('simulate: a trace on a stdin pipe, the JSON on stdout and the skipped lines on stderr, exit 0', async () => {
    const r = await runProcess(['simulate', '--json', '--trace', '-', '--limit', '2', '--window', '1s', '--algorithms', 'sliding-log'], { input: ['0', '10', 'junk', '20', '1010', '1011'].join('\n') + '\n' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('ratecontract simulate: -: skipped 1 line with no time (line 3)\n');
    const doc = JSON.parse(r.stdout) as { algorithms: Array<{ offered: number; admitted: number; maxInWindow: number }> };
    expect(doc.algorithms[0]).toMatchObject({ offered: 5, admitted: 4, maxInWindow: 2 });
  });

  it('replay: a gzip log on a stdin pipe, exit 0; an unwritable --svg of simulate, exit 2 with one line', async () => {
    const contract = join(dir, 'login.yaml');
    await writeFile(contract, 'limits:\n  - { name: login-ip, purpose: abuse, algorithm: sliding-log, limit: 2, window: 1h, key: ip, reason: guessing }\nroutes:\n  - { match: POST /login, limits: [login-ip] }\n');
    const lines = [0, 1, 2, 3].map((i) => `203.0.113.9 - - [01/Dec/2026:10:00:0${i} +0000] "POST /login HTTP/1.1" 200 5 "-" "x"`);
    const r = await runProcess(['replay', '--config', contract, '--log', '-', '--json'], { input: gzipSync(lines.join('\n') + '\n') });
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { log: { file: string; records: number }; contract: { limits: Array<{ name: string; wouldReject: number }> } };
    expect(report.log).toMatchObject({ file: 'stdin', records: 4 });
    expect(report.contract.limits.find((l) => l.name === 'login-ip')?.wouldReject).toBe(2);
    const svg = await runProcess(['simulate', '--svg', join(dir, 'no-such-dir', 'x.svg')]);
    expect([svg.code, svg.stdout]).toEqual([2, '']);
    expect(svg.stderr).toMatch(/^ratecontract simulate: cannot write .*x\.svg: ENOENT/);
    expect(svg.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});
