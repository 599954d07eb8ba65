import { spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';
import { clfTime, scratch, T0, type Report } from '../../unit/cli/replay-helpers.js';

/**
 * Bounded memory, measured on the process a user runs: the peak RSS of
 * `replay` over 1,000,000 lines against 10,000 lines with the same keys.
 *
 * Both runs cap V8's old space at 48 MiB (`--max-old-space-size`): a replay
 * whose live heap grew with the log would die of it, so the bound is on
 * what replay holds, not on when the collector happens to run (uncapped, V8
 * lets garbage pile up to a size that depends on the run's length, not on
 * what is live; see docs/cli.md).
 */

const CONTRACT = `limits:
  - { name: login-ip, purpose: abuse, limit: 5, window: 15m, key: ip, reason: guessing }
  - { name: search-ip, purpose: shedding, algorithm: token-bucket, limit: 1, window: 10s, burst: 1, key: ip, reason: capacity }
  - { name: search-user, purpose: shedding, algorithm: sliding-window, limit: 100, window: 1m, key: principal, reason: capacity }
routes:
  - { match: POST /login, limits: [login-ip] }
  - { match: GET /search, limits: [search-user, search-ip] }
  - { match: GET /health, limits: [] }
`;

const PATHS = ['POST /login', 'GET /search?q=a', 'GET /search?q=b', 'GET /health', 'GET /missing'];

/** `lines` lines, 100 a second, from 500 addresses and 50 users (the same keys whatever the length), with one malformed line in 1000. */
async function writeLog(path: string, lines: number): Promise<void> {
  const out = createWriteStream(path);
  let batch: string[] = [];
  for (let i = 0; i < lines; i++) {
    if (i % 1000 === 999) batch.push('not a log line');
    else {
      const [method, target] = (PATHS[i % PATHS.length] as string).split(' ') as [string, string];
      batch.push(`203.0.113.${i % 250} - ${i % 3 === 0 ? '-' : `user${i % 50}`} [${clfTime(T0 + Math.floor(i / 100) * 1000)}] "${method} ${target} HTTP/1.1" 200 512 "-" "load/1.0"`);
      if (i % 7 === 0) batch[batch.length - 1] = (batch[batch.length - 1] as string).replace('203.0.113.', '198.51.100.');
    }
    if (batch.length === 10_000) {
      if (!out.write(batch.join('\n') + '\n')) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
      batch = [];
    }
  }
  out.end(batch.length > 0 ? batch.join('\n') + '\n' : '');
  await new Promise<void>((resolve, reject) => out.on('finish', () => resolve()).on('error', reject));
}

/** Runs replay with a capped old space; resolves to the report (`run.peakRssBytes` is the process's own maxRSS). */
function replay(config: string, log: string): Promise<Report> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--max-old-space-size=48', BIN, 'replay', '--config', config, '--log', log, '--json'], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`replay exited ${String(code)}: ${stderr}`));
      else resolve(JSON.parse(stdout) as Report);
    });
  });
}

const MiB = 2 ** 20;

let files: ReturnType<typeof scratch>;
beforeAll(() => {
  files = scratch();
});
afterAll(() => files.cleanup());

describe('replay memory', () => {
  it('a 1,000,000-line log needs no more memory than a 10,000-line one with the same keys', async () => {
    const config = files.file('contract.yaml', CONTRACT);
    const small = files.dir + '/small.log';
    const large = files.dir + '/large.log';
    await writeLog(small, 10_000);
    await writeLog(large, 1_000_000);
    const s = await replay(config, small);
    const l = await replay(config, large);
    expect(s.log.lines).toBe(10_000);
    expect(l.log.lines).toBe(1_000_000);
    expect(l.log.malformed).toBe(1000);
    expect(l.log.records).toBe(999_000);
    // The run did the work: limits tripped on both routes, and the no-route lines were counted.
    const tripped = l.contract.limits.filter((x) => x.wouldReject > 0).map((x) => x.name);
    expect(tripped).toEqual(expect.arrayContaining(['login-ip', 'search-ip']));
    expect(l.contract.totals.unrouted).toBeGreaterThan(190_000);
    const diff = l.run.peakRssBytes - s.run.peakRssBytes;
    console.log(
      `replay peak RSS: 10,000 lines ${(s.run.peakRssBytes / MiB).toFixed(1)} MiB, 1,000,000 lines ${(l.run.peakRssBytes / MiB).toFixed(1)} MiB ` +
        `(+${(diff / MiB).toFixed(1)} MiB), ${l.run.linesPerSecond} lines/s`,
    );
    expect(l.run.peakRssBytes).toBeLessThan(160 * MiB);
    expect(diff).toBeLessThan(40 * MiB);
  }, 120_000);
});
