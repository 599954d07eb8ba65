/**
 * `ratecontract suggest`, spawned as a user runs it, on a log whose per-key
 * peaks are known: user i sends i requests within one minute (peaks 1 to
 * 100), one address hammers the login. The per-key peak distribution, the
 * suggested N (percentile x headroom) and burst, what the current N would
 * block, the threat arithmetic of the abuse limit, `--write` (comments kept)
 * diffed by `audit --against`, Markdown, and bad usage refused with the
 * option's name.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, STACK_LINE } from './helpers.js';
import { combinedLine, scratch, T0, type Req } from '../../unit/cli/replay-helpers.js';

const CONTRACT = `# the contract, as an operator wrote it
limits:
  - { name: per-user, purpose: shedding, algorithm: sliding-window, limit: 200, window: 1m, key: principal, reason: capacity } # per user
  - { name: search-ip, purpose: shedding, algorithm: token-bucket, limit: 30, window: 1m, burst: 5, key: ip, reason: capacity }
  - { name: login-ip, purpose: abuse, algorithm: sliding-log, limit: 5, window: 15m, key: ip, reason: guessing }
routes:
  - { match: GET /api/*, limits: [per-user] }
  - { match: GET /search, limits: [search-ip] }
  - { match: POST /login, limits: [login-ip] }
`;

function log(): string {
  const reqs: Req[] = [];
  for (let u = 1; u <= 100; u++) {
    for (let i = 0; i < u; i++) reqs.push({ time: T0 + u * 1000 + i * 100, method: 'GET', target: '/api/x', ip: `10.0.0.${u}`, principal: `user${u}` });
  }
  // Search: 40 addresses, address a sends 2a requests in 20 s.
  for (let a = 1; a <= 40; a++) for (let i = 0; i < 2 * a; i++) reqs.push({ time: T0 + i * Math.floor(20_000 / (2 * a)), method: 'GET', target: '/search?q=x', ip: `192.0.2.${a}` });
  for (let i = 0; i < 50; i++) reqs.push({ time: T0 + i * 2000, method: 'POST', target: '/login', ip: '198.51.100.9', status: 401 });
  reqs.sort((a, b) => a.time - b.time);
  return reqs.map(combinedLine).join('\n') + '\n';
}

interface Limit {
  name: string;
  peak: { p50: number; p90: number; p99: number; p999: number; max: number };
  peakShort: { p90: number; max: number };
  suggested: { limit: number; burst: number | null } | null;
  current: { limit: number; burst: number | null };
  keys: { seen: number; sampleRate: number };
  currentWouldBlock: { keys: number; requests: number; share: number; topKeys: Array<{ key: string; rejections: number }> };
  threat: null | { guessSpace: number; current: { attemptsPerDay: number; daysToGuessHalf: number }; suggested: { attemptsPerDay: number } | null };
}

let files: ReturnType<typeof scratch>;
let config: string;
let logFile: string;
beforeAll(() => {
  files = scratch();
  config = files.file('contract.yaml', CONTRACT);
  logFile = files.file('access.log', log());
});
afterAll(() => files.cleanup());

describe('ratecontract suggest', () => {
  it('per-key peaks, the suggested N and burst, what the current N blocks, the threat arithmetic', async () => {
    const r = await runProcess(['suggest', '--config', config, '--log', logFile, '--percentile', '90', '--headroom', '1.5', '--json', '--show-keys']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { percentile: number; headroom: number; limits: Limit[]; memory: { maxKeysPerLimit: number; boundBytes: number } };
    expect([report.percentile, report.headroom]).toEqual([90, 1.5]);
    const byName = new Map(report.limits.map((l) => [l.name, l]));
    const user = byName.get('per-user') as Limit;
    expect(user.keys).toEqual({ seen: 100, measured: 100, sampleRate: 1 });
    expect(user.peak).toEqual({ p50: 50, p90: 90, p99: 99, p999: 100, max: 100 });
    expect(user.suggested).toEqual({ limit: 135, burst: null });
    expect(user.currentWouldBlock.keys).toBe(0);
    const search = byName.get('search-ip') as Limit;
    expect(search.peak.max).toBe(80);
    expect(search.suggested?.limit).toBe(Math.ceil(search.peak.p90 * 1.5));
    expect(search.suggested?.burst).toBe(Math.ceil(search.peakShort.p90 * 1.5));
    // The current 30 per minute with a burst of 5 blocks the heavier addresses; the heaviest leads.
    expect(search.currentWouldBlock.keys).toBeGreaterThan(10);
    expect(search.currentWouldBlock.topKeys[0]?.key).toBe('192.0.2.40');
    const login = byName.get('login-ip') as Limit;
    expect(login.currentWouldBlock).toMatchObject({ keys: 1, requests: 45 });
    expect(login.currentWouldBlock.share).toBeCloseTo(0.9, 10);
    // 5 per 15 min on a sliding log: 480 attempts a day; half of a million 6-digit codes in 1,041.7 days.
    expect(login.threat?.current.attemptsPerDay).toBe(480);
    expect(login.threat?.current.daysToGuessHalf).toBeCloseTo(500_000 / 480, 6);
    expect(login.threat?.suggested?.attemptsPerDay).toBe((login.suggested?.limit ?? 0) * 96);
    expect(report.memory.maxKeysPerLimit).toBe(20_000);
  });

  it('--write keeps the file\'s comments and layout with the suggested numbers, and audit --against diffs them', async () => {
    const out = files.dir + '/suggested.yaml';
    const r = await runProcess(['suggest', '--config', config, '--log', logFile, '--percentile', '90', '--headroom', '1.5', '--write', out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`wrote ${out}`);
    const written = readFileSync(out, 'utf8');
    expect(written).toContain('# the contract, as an operator wrote it');
    expect(written).toContain('# per user');
    expect(written).toContain('{name: per-user, purpose: shedding, algorithm: sliding-window, limit: 135, window: 1m, key: principal, reason: capacity}');
    const audit = await runProcess(['audit', '--config', out, '--against', config, '--json']);
    const doc = JSON.parse(audit.stdout) as { changes: Array<{ subject: string; weakens: boolean }> };
    expect(doc.changes.map((c) => c.subject).sort()).toEqual(expect.arrayContaining(['login-ip', 'per-user', 'search-ip']));
  });

  it('--markdown: the per-limit table and the abuse table', async () => {
    const r = await runProcess(['suggest', '--config', config, '--log', logFile, '--markdown']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('| limit | purpose | key | window | N now | per-key peak p50 / p90 / p99 / p99.9 / max | suggested N |');
    expect(r.stdout).toContain('| per-user | shedding | principal | 1m | 200 | 50 / 90 / 99 / 100 / 100 | 149 |');
    expect(r.stdout).toContain('| abuse limit | attempts per key per day now |');
    expect(r.stdout).toContain('| login-ip | 480 | 2.9 years |');
  });

  it.each([
    [['--percentile', '10'], '--percentile must be a number from 50 to 100, got "10"'],
    [['--headroom', 'lots'], '--headroom must be a number from 1 to 100, got "lots"'],
    [['--json', '--markdown'], '--json and --markdown are exclusive'],
    [['--max-keys', '5'], '--max-keys must be an integer from 100 to 1000000'],
    [['--percentil', '99'], 'percentil'],
  ])('%j is refused with exit 2, naming the option', async (extra, message) => {
    const r = await runProcess(['suggest', '--config', config, '--log', logFile, ...extra]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).not.toMatch(STACK_LINE);
  });

  it('a log without a request is refused with exit 2', async () => {
    const r = await runProcess(['suggest', '--config', config, '--log', files.file('empty.log', '')]);
    expect([r.code, r.stderr.trim()]).toEqual([2, expect.stringContaining('holds no request') as string]);
  });
});
