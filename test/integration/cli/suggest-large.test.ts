/**
 * `ratecontract suggest` in bounded memory, measured on the process a user
 * runs: a generated log of 2,000,000 lines piped to stdin (262,144
 * addresses, 20,000 users) against 1,000,000 lines (which already meet every key), both
 * with V8's old space capped at 160 MiB, so a run whose live heap grew with
 * the log would die of it. The keys measured stop at --max-keys per limit
 * (then a sample), and a progress line reaches stderr every million lines.
 * (docs/cli.md states the bound and a 10,000,000-line run.)
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';
import { clfTime, scratch, T0 } from '../../unit/cli/replay-helpers.js';

const CONTRACT = `limits:
  - { name: per-user, purpose: shedding, algorithm: sliding-window, limit: 20, window: 1m, key: principal, reason: capacity }
  - { name: api-ip, purpose: shedding, algorithm: token-bucket, limit: 30, window: 1m, burst: 5, key: ip, reason: capacity }
  - { name: login-ip, purpose: abuse, limit: 5, window: 15m, key: ip, reason: guessing }
routes:
  - { match: GET /api/*, limits: [per-user, api-ip] }
  - { match: POST /login, limits: [login-ip] }
`;

/** `lines` lines, 10,000 a second of log time, from the same 262,144 addresses and 20,000 users whatever the length. */
function* logLines(lines: number): Generator<string> {
  let stamp = '';
  let sec = -1;
  let batch: string[] = [];
  for (let i = 0; i < lines; i++) {
    if (Math.floor(i / 10_000) !== sec) {
      sec = Math.floor(i / 10_000);
      stamp = clfTime(T0 + sec * 1000);
    }
    const h = Math.imul(i, 2654435761) >>> 0;
    batch.push(`10.${(h >>> 16) & 3}.${(h >>> 8) & 255}.${h & 255} - user${h % 20_000} [${stamp}] "${i % 5 === 0 ? 'POST /login' : 'GET /api/x'} HTTP/1.1" 200 1 "-" "g"`);
    if (batch.length === 20_000) {
      yield batch.join('\n') + '\n';
      batch = [];
    }
  }
  if (batch.length > 0) yield batch.join('\n') + '\n';
}

interface Run {
  readonly report: { run: { peakRssBytes: number }; log: { records: number }; limits: Array<{ name: string; keys: { seen: number; measured: number; sampleRate: number } }> };
  readonly stderr: string;
}

function suggest(config: string, lines: number): Promise<Run> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--max-old-space-size=160', BIN, 'suggest', '--config', config, '--log', '-', '--json'], { stdio: ['pipe', 'pipe', 'pipe'], timeout: 400_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`suggest exited ${String(code)}: ${stderr}`));
      else resolve({ report: JSON.parse(stdout) as Run['report'], stderr });
    });
    Readable.from(logLines(lines)).pipe(child.stdin);
  });
}

const MiB = 2 ** 20;
let files: ReturnType<typeof scratch>;
beforeAll(() => {
  files = scratch();
});
afterAll(() => files.cleanup());

describe('suggest memory', () => {
  it('2,000,000 lines need no more memory than 1,000,000 with the same keys; keys measured stop at --max-keys; progress on stderr', async () => {
    const config = files.file('contract.yaml', CONTRACT);
    const small = await suggest(config, 1_000_000);
    const large = await suggest(config, 2_000_000);
    expect(large.report.log.records).toBe(2_000_000);
    for (const l of large.report.limits) expect(l.keys.measured, l.name).toBeLessThanOrEqual(20_000);
    const ip = large.report.limits.find((l) => l.name === 'api-ip');
    expect(ip?.keys.sampleRate).toBeLessThan(1);
    // 262,144 addresses at most (fewer in 2,000,000 lines), estimated from the sample.
    expect(ip?.keys.seen).toBeGreaterThan(150_000);
    expect(ip?.keys.seen).toBeLessThan(320_000);
    expect(large.stderr.split('\n').filter((l) => /^ratecontract suggest: [\d,]+ requests replayed/.test(l))).toHaveLength(2);
    expect(small.stderr.split('\n').filter((l) => l.startsWith('ratecontract suggest: '))).toHaveLength(1);
    const diff = large.report.run.peakRssBytes - small.report.run.peakRssBytes;
    console.log(`suggest peak RSS: 1,000,000 lines ${(small.report.run.peakRssBytes / MiB).toFixed(1)} MiB, 2,000,000 lines ${(large.report.run.peakRssBytes / MiB).toFixed(1)} MiB (+${(diff / MiB).toFixed(1)} MiB)`);
    expect(large.report.run.peakRssBytes).toBeLessThan(320 * MiB);
    expect(diff).toBeLessThan(48 * MiB);
  }, 600_000);
});
