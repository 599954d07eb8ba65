import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { auditContract, type AuditReport, type AuditRow } from '../../../packages/cli/src/contract/audit.js';
import { parseConfig } from '../../../packages/ratecontract/src/config/index.js';
import { runCli, type CliRun } from './helpers.js';

const dir = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** `ratecontract ...args` in-process (helpers.ts), from the fixtures folder; the spawned command's exit codes are in test/integration/cli. */
function run(...args: string[]): Promise<CliRun> {
  return runCli(args, { cwd: dir });
}

async function auditJson(...args: string[]): Promise<{ code: number | null; report: AuditReport & { changes?: { kind: string; subject: string; weakens: boolean }[] } }> {
  const r = await run('audit', '--json', ...args);
  expect(r.stderr).toBe('');
  return { code: r.code, report: JSON.parse(r.stdout) as AuditReport };
}

const corpus = readdirSync(`${dir}audit`)
  .sort()
  .map((name) => {
    const text = readFileSync(`${dir}audit/${name}`, 'utf8');
    const expected = [...text.matchAll(/^# expect: (\S+) (\S+) (.+)$/gm)].map((m) => `${m[1]} ${m[2]} ${m[3]}`);
    return { name, expected };
  });

describe('ratecontract audit findings: one fixture per finding, pinned by code (the CLI\'s run)', () => {
  it('covers every finding code', () => {
    const codes = new Set(corpus.flatMap((c) => c.expected.map((e) => e.split(' ')[0])));
    expect([...codes].sort()).toEqual([
      'RC_AUDIT_ABUSE_FAIL_OPEN',
      'RC_AUDIT_CLIENT_CHOSEN_KEY',
      'RC_AUDIT_FIXED_WINDOW_BOUNDARY',
      'RC_AUDIT_GLOBAL_ONLY',
      'RC_AUDIT_MEMORY_STORE_REPLICAS',
      'RC_AUDIT_NEVER_TRIPS',
      'RC_AUDIT_NO_CATCH_ALL',
      'RC_AUDIT_NO_REASON',
      'RC_AUDIT_ROUTE_UNCOVERED',
      'RC_AUDIT_SHADOW',
      'RC_AUDIT_SHARED_FAILURE_DOMAIN',
      'RC_AUDIT_UNBOUNDED_KEYSPACE',
      'RC_AUDIT_UNUSED_LIMIT',
    ]);
  });

  it.each(corpus.map((c) => [c.name, c] as const))('%s', async (_n, c) => {
    const { code, report } = await auditJson('--config', `audit/${c.name}`);
    // Exactly the expected findings: nothing missing, nothing extra.
    expect(report.findings.map((f) => `${f.code} ${f.severity} ${f.subject}`).sort()).toEqual([...c.expected].sort());
    expect(code).toBe(c.expected.some((e) => e.split(' ')[1] === 'error') ? 1 : 0);
  });

  it('the built-in demo contract has no error or warning', async () => {
    const { code, report } = await auditJson();
    expect(code).toBe(0);
    expect(report.findings.map((f) => f.code)).toEqual(['RC_AUDIT_NO_CATCH_ALL']);
    expect(report.rows.map((r) => r.name)).toEqual(['otp-recipient', 'otp-tenant', 'otp-ip', 'otp-global', 'login-account', 'login-ip', 'search-tenant', 'search-ip']);
  });
});

function rowOf(yaml: string): AuditRow {
  const report = auditContract(parseConfig(`${yaml}routes:\n  - { match: GET /a, limits: [a] }\n`, { file: 'x.yaml' }));
  return report.rows[0] as AuditRow;
}

describe('the contract table: words and numbers', () => {
  it('5 per 15 min on a sliding log is 480 per day', () => {
    const r = rowOf('limits:\n  - { name: a, purpose: abuse, algorithm: sliding-log, limit: 5, window: 15m, key: ip }\n');
    expect([r.maxPerDay, r.sustainedPerDay, r.maxPerWindow]).toEqual([480, 480, 5]);
    expect(r.bound).toBe('at most 5 in any 900 s interval');
  });

  it('a token bucket: "at most 20 + 1.67/s x t"; its day adds the burst', () => {
    const r = rowOf('limits:\n  - { name: a, purpose: shedding, algorithm: token-bucket, limit: 100, window: 1m, burst: 20, key: ip }\n');
    expect(r.bound).toBe('at most 20 + 1.67/s x t');
    expect(r.burst).toBe(20);
    expect(r.ratePerSecond).toBeCloseTo(100 / 60, 10);
    expect(r.maxPerDay).toBe(20 + Math.floor(((86_400_000 - 1) * 100) / 60_000));
    expect(r.sustainedPerDay).toBe(144_000);
  });

  it('two-tier: the allotment bound with k and maxAllotment, the reserve of a bucket, the pre-filter clause', () => {
    const allotment = rowOf('replicas: 4\nlimits:\n  - { name: a, purpose: shedding, algorithm: fixed-window, limit: 1000, window: 1m, key: ip, tier: { mode: allotment } }\n');
    expect(allotment.tier).toBe('allotment: never above the bound; a window may admit up to k x maxAllotment = 124 fewer (k = 4, maxAllotment 31: unspent allotments, which end with their window or after 6s)');
    const bucket = rowOf('replicas: 2\nlimits:\n  - { name: a, purpose: shedding, algorithm: gcra, limit: 100, window: 1m, burst: 50, key: ip, tier: { mode: allotment, maxAllotment: 5 } }\n');
    expect(bucket.tier).toBe(
      'allotment: never above the bound; the shared bucket holds burst - k x maxAllotment = 40 (k = 2, maxAllotment 5) and allots the rest, so bursts may fall short of 50 by up to 2 x k x maxAllotment = 20 (the reserve and unspent allotments, for up to 6s)',
    );
    const filter = rowOf('limits:\n  - { name: a, purpose: abuse, algorithm: sliding-window, limit: 5, window: 15m, key: ip, tier: { mode: pre-filter } }\n');
    expect(filter.tier).toContain('pre-filter: a process-local copy at N = 5');
    expect(rowOf('limits:\n  - { name: a, purpose: abuse, limit: 5, window: 15m, key: ip }\n').tier).toBeNull();
  });

  it('a fixed window: "up to 2N = 200 in a 60 s interval that straddles a boundary"', () => {
    const r = rowOf('limits:\n  - { name: a, purpose: shedding, algorithm: fixed-window, limit: 100, window: 1m, key: ip }\n');
    expect(r.bound).toBe('100 per aligned 1m window; up to 2N = 200 in a 60 s interval that straddles a boundary');
    expect(r.maxPerWindow).toBe(200);
  });

  it('a sliding window of precision 4: "at most 100 in any 45 s interval", 2N - 1 in any W, and 24 more bytes per key', () => {
    const r = rowOf('limits:\n  - { name: a, purpose: shedding, algorithm: sliding-window, limit: 100, window: 1m, precision: 4, key: ip, keySlots: 1000 }\n');
    expect(r.bound).toBe('at most 100 in any 45 s interval, under 2N = 200 in any 60 s interval (precision 4: 4 sub-windows of 15s, only the oldest estimated)');
    expect(r.maxPerWindow).toBe(199);
    expect(r.keyspace?.bytesPerKey).toBe(256 + 24);
    const one = rowOf('limits:\n  - { name: a, purpose: shedding, algorithm: sliding-window, limit: 100, window: 1m, key: ip, keySlots: 1000 }\n');
    expect(one.bound).toBe('100 per aligned 1m window, under 2N = 200 in any 60 s interval (two-counter estimate)');
    expect(one.keyspace?.bytesPerKey).toBe(256);
  });

  it('closed: "k x N = 40 attempts per 15 min while the store is down, then 503 after 30 s"', () => {
    const r = rowOf('stores:\n  s: { type: redis, url: redis://10.1.2.3:6380/2 }\nreplicas: 4\nlimits:\n  - { name: a, purpose: abuse, limit: 10, window: 15m, key: ip, store: s }\n');
    expect(r.failMode).toBe('closed: k x N = 40 attempts per 15m while the store is down (k = 4), then 503 after 30 s');
    expect([r.outageMaxPerWindow, r.replicas, r.status, r.failureDomain]).toEqual([40, 4, 429, 'redis 10.1.2.3:6380/2']);
  });

  it('degraded: "ceil(N/k) per replica"', () => {
    const r = rowOf('stores:\n  s: { type: redis, url: redis://h }\nreplicas: 4\nlimits:\n  - { name: a, purpose: shedding, limit: 10, window: 1s, key: global, store: s }\n');
    expect(r.failMode).toBe('degraded: ceil(N/k) = 3 per replica per 1s, 12 across k = 4; never rejects for lack of a store');
    expect(r.status).toBe(503);
  });

  it('replicas: discover keeps k symbolic', () => {
    const r = rowOf('stores:\n  s: { type: redis, url: redis://h }\nreplicas: discover\nlimits:\n  - { name: a, purpose: abuse, limit: 10, window: 15m, key: body.phone, store: s, failClosedAfter: 0 }\n');
    expect(r.failMode).toBe('closed: k x N = k x 10 attempts per 15m while the store is down (k discovered at run time), 503 at once');
    expect([r.replicas, r.outageMaxPerWindow, r.clientSupplied]).toEqual([null, null, true]);
  });

  it('keySlots: the key and memory bound, and the birthday-bound collision rate of a live key', () => {
    const r = rowOf('stores:\n  s: { type: redis, url: redis://h }\nlimits:\n  - { name: a, purpose: abuse, limit: 3, window: 15m, key: body.phone, keySlots: 65536, store: s }\n');
    expect(r.keyspace?.maxKeys).toBe(65536);
    expect(r.keyspace?.bytesPerKey).toBe(256);
    expect(r.keyspace?.maxBytes).toBe(65536 * 256);
    expect(r.keyspace?.keyed).toBe(false);
    // 1 - (1 - 1/S)^(n-1), computed here the long way.
    for (const c of r.keyspace?.collisions ?? []) expect(c.rate).toBeCloseTo(1 - Math.pow(1 - 1 / 65536, c.liveKeys - 1), 12);
    expect(r.keyspace?.collisions.map((c) => c.liveKeys)).toEqual([655, 6554, 65536]);
    expect(r.keyspace?.collisions[2]?.rate).toBeCloseTo(1 - Math.exp(-1), 4);
    // A sliding log and a lease set are sized at N entries.
    const log = rowOf('limits:\n  - { name: a, purpose: abuse, algorithm: sliding-log, limit: 10, window: 1m, key: ip, keySlots: 1000 }\n');
    expect([log.keyspace?.bytesPerKey, log.keyspace?.keyed]).toEqual([256 + 20 * 10, true]);
    expect(rowOf('limits:\n  - { name: a, purpose: abuse, limit: 10, window: 1m, key: ip }\n').keyspace).toBeNull();
  });

  it('keySlots in the text rendering', async () => {
    const text = await run('audit', '--config', 'audit/bounded-keyspace.yaml');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('  keyspace   at most 65536 keys x 256 B = 16.0 MiB of Redis memory; a live key shares its slot (a stricter, shared budget): 0.99% at 655 live keys, 9.52% at 6554 live keys, 63% at 65536 live keys; slot hash unkeyed (set the store\'s keySecretEnv');
  });

  it('the text and markdown renderings carry the table and the findings', async () => {
    const text = await run('audit', '--config', 'audit/global-only.yaml');
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('  fail mode  degraded: ceil(N/k) = 50 per replica per 1s, 50 across k = 1; never rejects for lack of a store\n');
    expect(text.stdout).toContain('error RC_AUDIT_GLOBAL_ONLY  routes[0] POST /otp/send: the chain is only a global limit');
    const md = await run('audit', '--markdown', '--config', 'audit/global-only.yaml');
    expect(md.code).toBe(1);
    expect(md.stdout).toContain('| limit | purpose | key | algorithm and bound | status | fail mode | per day | routes | store | keyspace | shadow | reason |');
    expect(md.stdout).toContain('| `otp-global` | shedding | `global` | gcra, 50 per 1s: at most 50 + 50/s x t | 503 |');
    expect(md.stdout).toContain('- **error** `RC_AUDIT_GLOBAL_ONLY` routes[0] POST /otp/send:');
  });
});

describe('ratecontract audit --against', () => {
  it('lists what changed and flags what weakens the contract', async () => {
    const { code, report } = await auditJson('--config', 'audit-diff/after.yaml', '--against', 'audit-diff/before.yaml');
    expect(code).toBe(0);
    expect(report.changes?.map((c) => `${c.weakens ? 'weakens' : 'ok'} ${c.kind} ${c.subject}`).sort()).toEqual(
      [
        'weakens removed legacy',
        'weakens fail-mode login',
        'weakens key otp',
        'weakens numbers export',
        'weakens store export',
        'ok added search',
        'weakens route-chain routes: POST /otp',
        'ok route-added routes: GET /search',
      ].sort(),
    );
  });

  it('the same file against itself has no change', async () => {
    const { report } = await auditJson('--config', 'audit/safe.yaml', '--against', 'audit/safe.yaml');
    expect(report.changes).toEqual([]);
  });
});

describe('ratecontract audit exit codes and usage', () => {
  it('2 for a config it cannot read or that is invalid, with the one error line', async () => {
    const missing = await run('audit', '--config', 'nope.yaml');
    expect(missing).toEqual({ code: 2, stdout: '', stderr: 'nope.yaml: cannot read the file (ENOENT: no such file or directory)\n' });
    const invalid = await run('audit', '--config', '../../config/fixtures/bad/onerror-typo.yaml');
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/^\.\.\/\.\.\/config\/fixtures\/bad\/onerror-typo\.yaml: limits\[0\]\.onErorr: unknown option "onErorr"; did you mean "onError"\?/);
    const badAgainst = await run('audit', '--against', 'nope.yaml');
    expect(badAgainst.code).toBe(2);
  });

  it('--help exits 0; unknown options and --json with --markdown exit 2 naming the flag', async () => {
    const help = await run('audit', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: ratecontract audit /);
    const bogus = await run('audit', '--bogus');
    expect([bogus.code, bogus.stderr.split('\n')[0]]).toEqual([2, 'ratecontract audit: unknown option --bogus']);
    const both = await run('audit', '--json', '--markdown');
    expect([both.code, both.stderr.split('\n')[0]]).toEqual([2, 'ratecontract audit: --markdown: choose one of --json and --markdown']);
  });
});
