import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, STACK_LINE } from './helpers.js';

/**
 * `audit --fail-on`, as CI runs it (in-process; the spawned exit status is in test/integration/cli): exit 1 when a change weakens
 * the contract (or when anything changed, or on a warning), on top of the
 * error findings that always exit 1.
 */

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const run = (...args: string[]): ReturnType<typeof runCli> => runCli(['audit', ...args], { cwd: FIXTURES });

let dir = '';
let weakened = '';
let strengthened = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rc-fail-on-'));
  const base = (limit: number, onError: string): string =>
    `limits:\n  - { name: login-ip, purpose: abuse, onError: ${onError}, limit: ${limit}, window: 15m, key: ip, reason: spraying from one address }\nroutes:\n  - { match: '* /*', limits: [login-ip] }\n`;
  weakened = join(dir, 'weakened.yaml');
  strengthened = join(dir, 'strengthened.yaml');
  await writeFile(join(dir, 'base.yaml'), base(30, 'closed'));
  // Every change weakens: a higher number.
  await writeFile(weakened, base(60, 'closed'));
  // The only change is a lower number: a change that weakens nothing.
  await writeFile(strengthened, base(10, 'closed'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ratecontract audit --fail-on', () => {
  it('without --fail-on, a diff where every change weakens the contract still exits 0 (a report, not a gate)', async () => {
    const r = await run(weakened, '--against', join(dir, 'base.yaml'));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('changes: 1 (1 weakens the contract)');
    expect(r.stderr).toBe('');
  });

  it('--fail-on weaken: exit 1 when a change weakens the contract, with one line on stderr saying why', async () => {
    const r = await run('audit-diff/after.yaml', '--against', 'audit-diff/before.yaml', '--fail-on', 'weaken');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('changes: 8 (6 weaken the contract)');
    expect(r.stderr).toBe('ratecontract audit: 6 of 8 changes weaken the contract (--fail-on weaken)\n');
    const one = await run(weakened, '--against', join(dir, 'base.yaml'), '--fail-on', 'weaken', '--json');
    expect(one.code).toBe(1);
    expect(JSON.parse(one.stdout)).toMatchObject({ changes: [{ kind: 'numbers', weakens: true }] });
    expect(one.stderr).toBe('ratecontract audit: 1 of 1 change weakens the contract (--fail-on weaken)\n');
  });

  it('--fail-on weaken: exit 0 when the changes only strengthen it, or there is none', async () => {
    const stronger = await run(strengthened, '--against', join(dir, 'base.yaml'), '--fail-on', 'weaken');
    expect([stronger.code, stronger.stderr]).toEqual([0, '']);
    expect(stronger.stdout).toContain('changes: 1 (0 weaken the contract)');
    const same = await run('audit/safe.yaml', '--against', 'audit/safe.yaml', '--fail-on', 'weaken');
    expect([same.code, same.stderr]).toEqual([0, '']);
  });

  it('--fail-on change: exit 1 on any change, 0 on none', async () => {
    const stronger = await run(strengthened, '--against', join(dir, 'base.yaml'), '--fail-on', 'change');
    expect([stronger.code, stronger.stderr]).toEqual([1, 'ratecontract audit: 1 change since the old contract (--fail-on change)\n']);
    const same = await run('audit/safe.yaml', '--against', 'audit/safe.yaml', '--fail-on', 'change');
    expect(same.code).toBe(0);
  });

  it('--fail-on warn: exit 1 on a warning finding; info findings do not count', async () => {
    const warn = await run('audit/no-reason.yaml', '--fail-on', 'warn');
    expect(warn.code).toBe(1);
    expect(warn.stderr).toMatch(/^ratecontract audit: 1 warning finding \(--fail-on warn\)\n$/);
    const plain = await run('audit/no-reason.yaml');
    expect(plain.code).toBe(0);
    const info = await run('audit/safe.yaml', '--fail-on', 'warn');
    expect([info.code, info.stderr]).toEqual([0, '']);
  });

  it('conditions combine: --fail-on weaken,warn; error findings exit 1 whatever --fail-on says', async () => {
    const both = await run(strengthened, '--against', join(dir, 'base.yaml'), '--fail-on', 'weaken,warn');
    expect(both.code).toBe(0);
    const error = await run('audit/global-only.yaml', '--fail-on', 'warn');
    expect(error.code).toBe(1);
    const errorOnly = await run('audit/global-only.yaml', '--fail-on', 'error');
    expect(errorOnly.code).toBe(1);
  });

  it.each([
    [['--fail-on', 'weakne'], 'ratecontract audit: --fail-on: unknown condition "weakne"; did you mean "weaken"? (one or more of error, warn, weaken, change)'],
    [['--fail-on', 'weaken'], 'ratecontract audit: --fail-on weaken needs --against OLD_FILE'],
    [['--fail-on', 'change'], 'ratecontract audit: --fail-on change needs --against OLD_FILE'],
    [['--fail-on', ''], 'ratecontract audit: --fail-on needs one or more of error, warn, weaken, change'],
    [['--rls', 'x', '--fail-on', 'weaken'], 'ratecontract audit: --fail-on weaken needs --against OLD_FILE'],
  ])('%j: exit 2 with one line and the usage', async (args, line) => {
    const r = await run(...args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')[0]).toBe(line);
    expect(r.stderr).toContain('usage: ratecontract audit');
    expect(r.stderr).not.toMatch(STACK_LINE);
  });
});
