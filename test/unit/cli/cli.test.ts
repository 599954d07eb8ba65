import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, STACK_LINE } from './helpers.js';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ratecontract-cli-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every subcommand the CLI has; each must answer --help. */
const SUBCOMMANDS = ['serve', 'rls', 'simulate', 'replay', 'check', 'audit'];
/** Arguments past what each takes: the commands that read one contract take it as FILE, the others none. */
const STRAY: Record<string, string[]> = { check: ['a.yaml', 'stray'], audit: ['a.yaml', 'stray'], replay: ['a.yaml', 'stray'] };

describe('ratecontract help', () => {
  it.each([[[]], [['help']], [['--help']], [['-h']]])('%j lists every command on stdout and exits 0', async (args) => {
    const r = await runCli(args);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^usage: ratecontract <command>/);
    for (const name of [...SUBCOMMANDS, 'help']) expect(r.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
  });

  it('help <command> prints that command\'s usage', async () => {
    const r = await runCli(['help', 'simulate']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: ratecontract simulate \[options\]/);
  });

  it('an unknown command names itself, prints the command list to stderr and exits 2', async () => {
    for (const args of [['nonsense'], ['help', 'nonsense'], ['--bogus']]) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`unknown command "${args[args.length - 1] ?? ''}"`);
      expect(r.stderr).toContain('commands:');
      expect(r.stderr).not.toMatch(STACK_LINE);
    }
  });
});

describe.each(SUBCOMMANDS)('ratecontract %s', (name) => {
  it.each(['--help', '-h'])('%s prints the usage with every option on stdout and exits 0', async (flag) => {
    const r = await runCli([name, flag]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(new RegExp(`^usage: ratecontract ${name}`));
    expect(r.stdout).toContain('-h, --help');
  });

  it('--help wins over other arguments, even unknown ones', async () => {
    const r = await runCli([name, '--bogus', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^usage: ratecontract ${name}`));
  });

  it('an unknown option names itself, prints the usage to stderr, exits 2, and no stack trace', async () => {
    for (const bad of ['--bogus', '--bogus=1', '-x']) {
      const r = await runCli([name, bad]);
      expect(r.code, bad).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.split('\n')[0]).toBe(`ratecontract ${name}: unknown option ${bad.replace(/=.*/, '')}`);
      expect(r.stderr).toContain(`usage: ratecontract ${name}`);
      expect(r.stderr).not.toMatch(STACK_LINE);
    }
  });

  it('refuses a positional argument it does not take', async () => {
    const r = await runCli([name, ...(STRAY[name] ?? ['stray'])]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unexpected argument "stray"');
  });
});

describe('ratecontract simulate: bad values', () => {
  it.each([
    [['--limit', 'abc'], '--limit must be an integer from 1 to 100000, got "abc"'],
    [['--limit', '0'], '--limit must be an integer'],
    [['--limit', '2.5'], '--limit must be an integer'],
    [['--limit'], 'option --limit needs a value'],
    [['--limit', '--json'], 'option --limit needs a value'],
    [['--json=yes'], 'option --json takes no value'],
    [['--limit', '5', '--limit', '6'], 'option --limit is given twice'],
    [['--window', 'forever'], '--window: "forever" is not a duration'],
    [['--window', '0'], '--window: must be a positive integer'],
    [['--burst', '-1'], '--burst must be an integer'],
    [['--windows', '100001'], '--windows must be an integer from 1 to 100000'],
    [['--seed', 'x'], '--seed must be an integer'],
    [['--hold', '1y'], '--hold: "1y" is not a duration'],
    [['--pattern', 'sawtooth'], '--pattern must be one of boundary, steady, bursty, poisson, got "sawtooth"'],
    [['--algorithms', 'gcra,nope'], '--algorithms: unknown algorithm nope'],
    [['--algorithms', 'gcra,gcra'], '--algorithms: an algorithm is named twice'],
    [['--limit', '100000', '--windows', '200'], 'at most 10000000'],
    [['--window', '400d'], '--window: 400d is longer than the longest window, 2^35 ms'],
    [['--trace', 'x.log', '--pattern', 'steady'], '--trace and --pattern cannot be combined'],
    [['--trace', 'x.log', '--windows', '3'], '--trace and --windows cannot be combined'],
    [['--svg='], '--svg needs a file name'],
  ])('%j exits 2 naming the option', async (args, message) => {
    const r = await runCli(['simulate', ...args]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')[0]).toContain(message);
    expect(r.stderr).not.toMatch(STACK_LINE);
  });

  it('a trace that cannot be read names the file and exits 2, without usage or stack trace', async () => {
    const missing = join(dir, 'missing.log');
    const r = await runCli(['simulate', '--trace', missing]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`cannot read trace ${missing}`);
    expect(r.stderr).not.toContain('usage:');
    expect(r.stderr).not.toMatch(STACK_LINE);
  });

  it('a trace with no time stamp at all exits 2 and names the malformed lines', async () => {
    const file = join(dir, 'garbage.txt');
    await writeFile(file, 'hello\n\n# comment\nworld\n');
    const r = await runCli(['simulate', '--trace', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`ratecontract simulate: trace ${file}: no time stamp in 4 lines (malformed: lines 1, 4)\n`);
  });

  it('an --svg file that cannot be written names it and exits 2', async () => {
    const r = await runCli(['simulate', '--svg', join(dir, 'no-such-dir', 'x.svg')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('cannot write');
    expect(r.stderr).not.toMatch(STACK_LINE);
  });
});

interface JsonRun {
  traffic: { pattern: string; offered: number; windows: number; malformed?: number; malformedLines?: number[]; origin?: number; seed?: number };
  limit: number;
  windowMs: number;
  bucketMs: number;
  algorithms: Array<{ algorithm: string; offered: number; admitted: number; rejected: number; maxInWindow: number; bound: number; series: { admitted: number[]; peakInWindow: number[] } }>;
}

async function json(args: readonly string[]): Promise<JsonRun> {
  const r = await runCli(['simulate', '--json', ...args]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as JsonRun;
}

describe('ratecontract simulate: output', () => {
  it('--json gives per algorithm the counts, the max in any window, the bound and the time series', async () => {
    const doc = await json([]);
    expect(doc.traffic).toEqual({ pattern: 'boundary', windows: 10, offered: 1000 });
    expect([doc.limit, doc.windowMs, doc.bucketMs]).toEqual([100, 60_000, 6000]);
    const by = Object.fromEntries(doc.algorithms.map((a) => [a.algorithm, a]));
    expect(by['fixed-window']).toMatchObject({ offered: 1000, admitted: 1000, rejected: 0, maxInWindow: 200, bound: 200 });
    expect(by['sliding-log']).toMatchObject({ admitted: 500, maxInWindow: 100, bound: 100 });
    for (const a of doc.algorithms) {
      expect(a.series.admitted.length).toBe(110);
      expect(a.series.admitted.reduce((x, y) => x + y, 0)).toBe(a.admitted);
      expect(Math.max(...a.series.peakInWindow)).toBe(a.maxInWindow);
    }
  });

  it('simulates a quota-sized limit beyond the old 2^49 range (30,000 per 300 days) within its bound', async () => {
    const doc = await json(['--limit', '30000', '--window', '300d', '--windows', '1', '--pattern', 'steady', '--algorithms', 'gcra,fixed-window']);
    expect(doc.windowMs).toBe(300 * 86_400_000);
    for (const a of doc.algorithms) {
      expect(a.admitted).toBeGreaterThan(0);
      expect(a.maxInWindow).toBeLessThanOrEqual(a.bound);
    }
  });

  it('the seeded patterns are reproducible and the seed changes them', async () => {
    const a = await json(['--pattern', 'poisson', '--seed', '7', '--limit', '20', '--window', '1s']);
    const b = await json(['--pattern', 'poisson', '--seed', '7', '--limit', '20', '--window', '1s']);
    const c = await json(['--pattern', 'poisson', '--seed', '8', '--limit', '20', '--window', '1s']);
    expect(a).toEqual(b);
    expect(a.traffic.seed).toBe(7);
    expect(c.algorithms[0]?.series.admitted).not.toEqual(a.algorithms[0]?.series.admitted);
  });

  it('--trace reads ms, ISO times, JSON lines and combined log lines, counts malformed lines, and keeps window alignment', async () => {
    const file = join(dir, 'mixed.log');
    const lines = [
      '# a trace in every supported form',
      '2026-12-01T10:00:59.500Z',
      '{"time":"2026-12-01T10:00:59.900Z","method":"GET","path":"/"}',
      '{"ts":1796119259.95}',
      '203.0.113.9 - - [01/Dec/2026:11:00:59 +0100] "GET / HTTP/1.1" 200 12 "-" "curl/8"',
      'not a time',
      '2026-12-01T10:01:00.000Z',
      '{"timestamp":1796119260100}',
      '',
      '{"no":"time"}',
      '198.51.100.2 - - [01/Dec/2026:10:01:00 +0000] "POST /otp HTTP/1.1" 429 0 "-" "x"',
      '2026-12-01 10:01:00.5',
    ];
    await writeFile(file, lines.join('\n') + '\n');
    const r = await runCli(['simulate', '--json', '--trace', file, '--limit', '3', '--window', '1m', '--algorithms', 'fixed-window,sliding-log']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('skipped 2 lines with no time (lines 6, 10)');
    const doc = JSON.parse(r.stdout) as JsonRun;
    expect(doc.traffic).toMatchObject({ pattern: 'trace', offered: 8, malformed: 2, malformedLines: [6, 10], origin: Date.UTC(2026, 11, 1, 10, 0, 0), windows: 2 });
    const by = Object.fromEntries(doc.algorithms.map((a) => [a.algorithm, a]));
    // 4 requests in the last second of 10:00 and 4 in the first of 10:01: fixed-window admits 3 + 3 across the boundary.
    expect(by['fixed-window']).toMatchObject({ admitted: 6, maxInWindow: 6, bound: 6 });
    expect(by['sliding-log']).toMatchObject({ admitted: 3, maxInWindow: 3, bound: 3 });
  });

  it('--trace of plain ms numbers runs on the trace\'s own clock', async () => {
    const file = join(dir, 'ms.txt');
    await writeFile(file, ['0', '10', '20', '30', '40', '1010', '1011'].join('\n'));
    const doc = await json(['--trace', file, '--limit', '2', '--window', '1s', '--algorithms', 'sliding-log,gcra']);
    expect(doc.traffic).toMatchObject({ pattern: 'trace', offered: 7, origin: 0, windows: 2 });
    const by = Object.fromEntries(doc.algorithms.map((a) => [a.algorithm, a]));
    expect(by['sliding-log']).toMatchObject({ admitted: 4, maxInWindow: 2, bound: 2 });
  });

  it('--trace reads gzip files and stdin (-)', async () => {
    const text = ['0', '10', '20', '30', '40', '1010', '1011'].join('\n') + '\n';
    const gz = join(dir, 'ms.txt.gz');
    await writeFile(gz, gzipSync(Buffer.from(text)));
    const args = ['--limit', '2', '--window', '1s', '--algorithms', 'sliding-log'];
    const fromGzip = await json(['--trace', gz, ...args]);
    expect(fromGzip.algorithms[0]).toMatchObject({ offered: 7, admitted: 4, maxInWindow: 2, bound: 2 });
    const r = await runCli(['simulate', '--json', '--trace', '-', ...args], { input: text });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as JsonRun).algorithms).toEqual(fromGzip.algorithms);
  });

  it('without --json the terminal table stays, and --svg writes the chart too', async () => {
    const svg = join(dir, 'table.svg');
    const r = await runCli(['simulate', '--svg', svg]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/fixed-window\s+1000\s+1000\s+0\s+200\s+200/);
    expect(r.stdout).toMatch(/sliding-log\s+1000\s+500\s+500\s+100\s+100/);
    expect(r.stdout).toContain('admitted over time (one column per 6s):');
    expect(r.stderr).toBe(`ratecontract simulate: wrote ${svg}\n`);
    expect(await readFile(svg, 'utf8')).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  });
});
