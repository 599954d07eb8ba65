import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers.js';

/** Counts the commands print, at 0, 1 and 2 (the CLI's run, in-process): "1 limit", never "1 limits". */

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rc-plurals-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const LIMIT = (name: string): string => `  - { name: ${name}, purpose: abuse, limit: 5, window: 15m, key: ip, reason: guessing }\n`;

/** A contract of `n` limits, each on its own route. */
async function contract(n: number): Promise<string> {
  const file = join(dir, `c${n}.yaml`);
  const names = Array.from({ length: n }, (_, i) => `l${i}`);
  const limits = n === 0 ? 'limits: []\n' : `limits:\n${names.map(LIMIT).join('')}`;
  const routes = n === 0 ? 'routes: []\n' : `routes:\n${names.map((l, i) => `  - { match: POST /r${i}, limits: [${l}] }\n`).join('')}`;
  await writeFile(file, limits + routes);
  return file;
}

/** A trace with two good times and `bad` lines without one. */
async function trace(bad: number): Promise<string> {
  const file = join(dir, `t${bad}.txt`);
  await writeFile(file, ['0', ...Array.from({ length: bad }, () => 'no time here'), '10'].join('\n') + '\n');
  return file;
}

describe('check and audit: limits, routes and stores', () => {
  it.each([
    [0, 'ok: 0 limits, 0 routes, 0 stores, replicas 1'],
    [1, 'ok: 1 limit (1 abuse), 1 route, 0 stores, replicas 1'],
    [2, 'ok: 2 limits (2 abuse), 2 routes, 0 stores, replicas 1'],
  ])('check with %d limits', async (n, text) => {
    const file = await contract(n);
    const r = await runCli(['check', '--config', file]);
    expect(r.stdout).toBe(`${file}: ${text}\n`);
  });

  it.each([
    [0, '0 limits'],
    [1, '1 limit'],
    [2, '2 limits'],
  ])('audit with %d limits', async (n, text) => {
    const file = await contract(n);
    const r = await runCli(['audit', '--config', file]);
    expect(r.stdout.split('\n')[0]).toBe(`contract ${file}: ${text}, replicas 1`);
  });

  it('audit --against: 0, 1 and 2 changes, and how many weaken', async () => {
    const [zero, one, two] = [await contract(0), await contract(1), await contract(2)];
    const same = await runCli(['audit', '--config', one, '--against', one]);
    expect(same.stdout).toContain('\nchanges: 0 (0 weaken the contract)\n');
    // one -> zero: the limit and its route are removed (2 changes, both weaken).
    const removed = await runCli(['audit', '--config', zero, '--against', one]);
    expect(removed.stdout).toContain('\nchanges: 2 (2 weaken the contract)\n');
    // one -> two: one limit and one route added (2 changes, neither weakens).
    const added = await runCli(['audit', '--config', two, '--against', one]);
    expect(added.stdout).toContain('\nchanges: 2 (0 weaken the contract)\n');
    const md = await runCli(['audit', '--config', zero, '--against', one, '--markdown']);
    expect(md.stdout).toContain('#### Changes (2, 2 weaken the contract)');
  });

  it('audit --against with exactly one change that weakens', async () => {
    const before = join(dir, 'one-before.yaml');
    const after = join(dir, 'one-after.yaml');
    await writeFile(before, `limits:\n${LIMIT('a')}routes:\n  - { match: POST /a, limits: [a] }\n`);
    await writeFile(after, `limits:\n${LIMIT('a').replace('limit: 5', 'limit: 6')}routes:\n  - { match: POST /a, limits: [a] }\n`);
    const r = await runCli(['audit', '--config', after, '--against', before]);
    expect(r.stdout).toContain('\nchanges: 1 (1 weakens the contract)\n');
  });

  it('audit --rls: files and rules', async () => {
    const rls = join(dir, 'rls');
    await mkdir(rls);
    await writeFile(join(rls, 'd.yaml'), 'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n');
    const one = await runCli(['audit', '--rls', '--config', rls]);
    expect(one.stdout.split('\n')[0]).toBe('rate limit service config: 1 file, 1 rule');
    await writeFile(join(rls, 'e.yaml'), 'domain: e\ndescriptors:\n  - key: a\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n  - key: b\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n');
    const two = await runCli(['audit', '--rls', '--config', rls]);
    expect(two.stdout.split('\n')[0]).toBe('rate limit service config: 2 files, 3 rules');
  });
});

describe('simulate --trace: lines without a time, requests and windows', () => {
  it.each([
    [0, undefined, '(2 requests)'],
    [1, 'skipped 1 line with no time (line 2)', '(2 requests, 1 malformed line skipped)'],
    [2, 'skipped 2 lines with no time (lines 2, 3)', '(2 requests, 2 malformed lines skipped)'],
  ])('%d malformed', async (bad, note, traffic) => {
    const file = await trace(bad);
    const r = await runCli(['simulate', '--trace', file, '--limit', '1', '--window', '1s', '--algorithms', 'gcra']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe(note === undefined ? '' : `ratecontract simulate: ${file}: ${note}\n`);
    expect(r.stdout.split('\n')[0]).toBe(`ratecontract simulate: trace ${file} ${traffic}, limit 1 per 1s, 1 window, virtual clock`);
  });

  it('one request and one window in a pattern run: the table heading', async () => {
    const r = await runCli(['simulate', '--windows', '1', '--algorithms', 'gcra']);
    expect(r.stdout.split('\n')[0]).toBe("ratecontract simulate: pattern 'boundary', limit 100 per 1m, 1 window, virtual clock");
    const two = await runCli(['simulate', '--windows', '2', '--algorithms', 'gcra']);
    expect(two.stdout.split('\n')[0]).toBe("ratecontract simulate: pattern 'boundary', limit 100 per 1m, 2 windows, virtual clock");
  });

  it.each([
    [1, 'no time stamp in 1 line (malformed: line 1)'],
    [2, 'no time stamp in 2 lines (malformed: lines 1, 2)'],
  ])('a trace of %d lines without a time', async (n, text) => {
    const file = join(dir, `none${n}.txt`);
    await writeFile(file, Array.from({ length: n }, () => 'nope').join('\n') + '\n');
    const r = await runCli(['simulate', '--trace', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`ratecontract simulate: trace ${file}: ${text}\n`);
  });
});

describe('replay: lines, requests and malformed lines', () => {
  const good = '203.0.113.9 - - [01/Dec/2026:10:00:00 +0000] "GET /x HTTP/1.1" 200 12 "-" "curl/8"';
  it.each([
    [0, 'lines: 1 request, 0 malformed, 0 blank', '1 line'],
    [1, 'lines: 1 request, 1 malformed, 0 blank', '2 lines'],
  ])('%d malformed', async (bad, counts, lines) => {
    const file = join(dir, `log${bad}.log`);
    await writeFile(file, [good, ...Array.from({ length: bad }, () => 'garbage')].join('\n') + '\n');
    const r = await runCli(['replay', '--log', file]);
    expect(r.code, r.stderr).toBe(0);
    const out = r.stdout.split('\n');
    expect(out[0]).toContain(`, ${lines}, 2026-12-01T10:00:00.000Z`);
    expect(out[1]).toBe(counts);
    expect(out[out.length - 2]).toMatch(new RegExp(`^${lines} in `));
  });

  it.each([
    [1, '1 malformed line (line 1: not a common or combined log line)'],
    [2, '2 malformed lines (line 1: not a common or combined log line)'],
  ])('a log of %d malformed lines and no request', async (n, text) => {
    const file = join(dir, `bad${n}.log`);
    await writeFile(file, Array.from({ length: n }, () => 'garbage').join('\n') + '\n');
    const r = await runCli(['replay', '--log', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`ratecontract replay: log ${file} holds no request in combined format: ${text}\n`);
  });
});
