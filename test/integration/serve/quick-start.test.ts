/**
 * The README's quick start, as a newcomer runs it: `npm run serve` in the
 * checkout (with `-- --port 0 --admin-port 0`, so that it never collides with
 * a port in use; nothing else differs), the banner read as printed, and
 * every curl command it prints run with real curl and held to its caption.
 * demo-orders.test.ts runs the same commands in other orders. (With a stale
 * build, `npm run serve` builds first, as it does for a user.)
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { printedExamples, runAndCheck } from './demo-examples.js';
import { ROOT, type LogLine } from './helpers.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** The longest line a banner may print: it fits a 100-column terminal. */
const COLUMNS = 100;

/** The fenced block under "## Quick start". */
function quickStart(): string {
  const section = README.slice(README.indexOf('## Quick start'));
  const m = /```sh\n([\s\S]*?)```/.exec(section);
  if (m === null) throw new Error('README.md has no sh block under "## Quick start"');
  return m[1] as string;
}

interface NpmServe {
  readonly stderr: () => string;
  readonly logs: LogLine[];
  readonly exited: Promise<number | null>;
}

/** `npm run serve -- ARGS` in the checkout (under `timeout`, so it never outlives the test). */
function npmRunServe(args: readonly string[]): NpmServe {
  const proc = spawn('timeout', ['--signal=KILL', '120', 'npm', 'run', 'serve', '--', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  let out = '';
  const logs: LogLine[] = [];
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    let i;
    while ((i = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, i);
      out = out.slice(i + 1);
      // npm prints "> ratecontract@... serve" first; the service's lines are JSON.
      if (line.startsWith('{')) logs.push(JSON.parse(line) as LogLine);
    }
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { stderr: () => err, logs, exited };
}

async function until<T>(what: string, probe: () => T | undefined, budgetMs = 60_000): Promise<T> {
  const end = Date.now() + budgetMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`no ${what} within ${budgetMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the README quick start: npm run serve, then every printed curl command', () => {
  let s: NpmServe;
  let banner: string;
  let pid: number;

  beforeAll(async () => {
    // The command as the README gives it; what its comment promises (a 429 and a 503) is what the examples are held to.
    expect(quickStart()).toMatch(/^(npm ci && )?npm run serve\b/m);
    s = npmRunServe(['--port', '0', '--admin-port', '0']);
    // The banner is one write, ending with the examples and a blank line.
    banner = await until('banner', () => (/^try it[\s\S]*\n\n$/m.test(s.stderr()) ? s.stderr() : undefined));
    pid = (await until('startup line', () => s.logs.find((l) => l.event === 'startup'))).pid as number;
  });
  afterAll(async () => {
    try {
      if (pid !== undefined) process.kill(pid, 'SIGTERM');
    } catch {
      // already stopped by the last test
    }
    await s?.exited;
  });

  it('prints the contract, where it listens, and the examples, every line within 100 columns', () => {
    expect(banner).toMatch(/^ratecontract serve: demo API on the built-in demo contract\n/);
    expect(banner).toMatch(/^listening http:\/\/127\.0\.0\.1:\d+$/m);
    expect(banner).toMatch(/^admin http:\/\/127\.0\.0\.1:\d+ /m);
    const long = banner.split('\n').filter((l) => l.length > COLUMNS);
    expect(long, `lines over ${COLUMNS} columns`).toEqual([]);
  });

  it('every printed curl command shows what its caption says, run in the printed order', async () => {
    const url = /^listening (\S+)$/m.exec(banner)?.[1] as string;
    const examples = printedExamples(banner);
    expect(examples.length).toBe(4);
    for (const e of examples) {
      expect(e.command).toContain('curl ');
      expect(e.command).toContain(url);
    }
    await runAndCheck(
      examples,
      examples.map((_, i) => i),
    );
  });

  it('stops on SIGTERM and exits 0', async () => {
    process.kill(pid, 'SIGTERM');
    expect(await s.exited).toBe(0);
    expect(s.logs.some((l) => l.event === 'stopped')).toBe(true);
  });
});
