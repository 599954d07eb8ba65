import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, STACK_LINE, type CliRun } from './helpers.js';
import { combinedLine, jsonLine, scratch, T0, type Report, type Req } from './replay-helpers.js';

/**
 * `ratecontract replay` (the CLI's run, in-process), on logs whose answer is
 * known by construction: sliding-log limits (exactly N in any window), so a
 * key that sends N + k requests inside one window has exactly k rejected.
 */

const LOGIN_IP = `limits:
  - name: login-ip
    purpose: abuse
    algorithm: sliding-log
    limit: 5
    window: 15m
    key: ip
    reason: password guessing from one address
routes:
  - { match: POST /login, limits: [login-ip] }
  - { match: GET /health, limits: [] }
`;

// Principal, tenant (the identity header) and query keys; a Redis store that replay replaces; a shadow limit.
const IDENTITY = `stores:
  shared: { type: redis, url: 'redis://127.0.0.1:1' }
limits:
  - { name: login-user, purpose: abuse, algorithm: sliding-log, limit: 5, window: 15m, key: principal, reason: guessing one account }
  - { name: search-tenant, purpose: shedding, algorithm: sliding-log, limit: 3, window: 1m, key: principal, store: shared, reason: a tenant's share }
  - { name: export-user, purpose: shedding, algorithm: sliding-log, limit: 2, window: 1h, key: query.user, shadow: true, reason: export cost }
routes:
  - { match: POST /login, limits: [login-user] }
  - { match: GET /search, limits: [search-tenant] }
  - { match: GET /export, limits: [export-user] }
http:
  trustProxy: loopback
  identify: { header: x-tenant }
`;

const A = '192.0.2.1';
const B = '192.0.2.2';
const C = '198.51.100.7';

/** A within a minute sends 7 failed logins (2 over 5 per 15 min), B sends 5 (none over); one health check, one unrouted request. */
function loginRequests(): Req[] {
  const reqs: Req[] = [];
  for (let i = 0; i < 7; i++) reqs.push({ time: T0 + i * 8000, method: 'POST', target: '/login', ip: A, status: 401 });
  for (let i = 0; i < 5; i++) reqs.push({ time: T0 + i * 8000 + 1000, method: 'POST', target: '/login', ip: B, status: 401 });
  reqs.push({ time: T0 + 2000, method: 'GET', target: '/health', ip: C });
  reqs.push({ time: T0 + 3000, method: 'GET', target: '/nowhere?x=1', ip: C, status: 404 });
  return reqs.sort((a, b) => a.time - b.time);
}

/** The log text with a malformed line and a blank line inserted, and the line numbers the report must name. */
function loginLog(line: (r: Req) => string): { text: string; firstTripLine: number; malformedLine: number; unroutedLine: number } {
  const reqs = loginRequests();
  const lines = reqs.map(line);
  lines.splice(4, 0, 'this is not a log line');
  lines.splice(7, 0, '');
  const lineOf = (pred: (r: Req) => boolean, nth: number): number => {
    const r = reqs.filter(pred)[nth] as Req;
    return lines.indexOf(line(r)) + 1;
  };
  return {
    text: lines.join('\n') + '\n',
    firstTripLine: lineOf((r) => r.ip === A, 5),
    malformedLine: 5,
    unroutedLine: lineOf((r) => r.target.startsWith('/nowhere'), 0),
  };
}

function report(run: CliRun): Report {
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as Report;
}

function limit(r: Report['contract'], name: string): Report['contract']['limits'][number] {
  const l = r.limits.find((x) => x.name === name);
  expect(l, name).toBeDefined();
  return l as Report['contract']['limits'][number];
}

let files: ReturnType<typeof scratch>;
beforeAll(() => {
  files = scratch();
  files.file('login.yaml', LOGIN_IP);
  files.file('identity.yaml', IDENTITY);
});
afterAll(() => files.cleanup());

describe('replay: a login limit of 5 per 15 min, known by construction', () => {
  const expectLogin = (r: Report, log: ReturnType<typeof loginLog>): void => {
    expect(r.log).toMatchObject({ lines: 16, records: 14, blank: 1, malformed: 1, late: 0 });
    expect(r.log.malformedLines).toEqual([{ line: log.malformedLine, reason: expect.any(String) as string }]);
    expect(r.contract.totals).toEqual({
      requests: 14,
      limited: 12,
      unlimited: 1,
      unrouted: 1,
      unroutedLines: [{ line: log.unroutedLine, method: 'GET', path: '/nowhere' }],
      rejected: 2,
      shadowRejected: 0,
      wouldReject: 2,
    });
    const l = limit(r.contract, 'login-ip');
    expect(l).toMatchObject({ checked: 12, unkeyed: 0, wouldReject: 2, decided: 2, share: 2 / 12, routes: ['POST /login'] });
    // A's sixth attempt, 40 s in, is the first over the limit; B never is.
    expect(l.firstTrip).toEqual({ time: new Date(T0 + 40_000).toISOString(), line: log.firstTripLine });
    expect(l.topKeys).toEqual([{ key: A, rejections: 2, error: 0 }]);
  };

  it('combined log file', async () => {
    const log = loginLog(combinedLine);
    const path = files.file('login.log', log.text);
    const r = report(await runCli(['replay', '--config', files.dir + '/login.yaml', '--log', path, '--json', '--show-keys']));
    expect(r.log.format).toBe('combined');
    expectLogin(r, log);
  });

  it('JSON lines, gzip', async () => {
    const log = loginLog(jsonLine);
    const path = files.gzip('login.jsonl.gz', log.text);
    const r = report(await runCli(['replay', '--config', files.dir + '/login.yaml', '--log', path, '--format', 'json', '--json', '--show-keys']));
    expect(r.log.format).toBe('json');
    expectLogin(r, log);
  });

  it('combined log, gzip on stdin', async () => {
    const log = loginLog(combinedLine);
    const { gzipSync } = await import('node:zlib');
    const r = report(await runCli(['replay', '--config', files.dir + '/login.yaml', '--log', '-', '--json', '--show-keys'], { input: gzipSync(log.text) }));
    expect(r.log.file).toBe('stdin');
    expectLogin(r, log);
  });

  it('JSON lines on stdin', async () => {
    const log = loginLog(jsonLine);
    const r = report(await runCli(['replay', '--config', files.dir + '/login.yaml', '--log', '-', '--json', '--show-keys'], { input: log.text }));
    expectLogin(r, log);
  });

  it('hashes keys unless --show-keys: 12 hex characters, never the address, and a secret per run', async () => {
    const path = files.file('login-hash.log', loginLog(combinedLine).text);
    const args = ['replay', '--config', files.dir + '/login.yaml', '--log', path, '--json'];
    const first = await runCli(args);
    const r = report(first);
    expect(r.keys).toBe('hashed');
    const key = limit(r.contract, 'login-ip').topKeys[0]?.key;
    expect(key).toMatch(/^[0-9a-f]{12}$/);
    expect(first.stdout).not.toContain(A);
    const again = limit(report(await runCli(args)).contract, 'login-ip').topKeys[0]?.key;
    expect(again).not.toBe(key);
  });

  it('prints a readable table by default', async () => {
    const log = loginLog(combinedLine);
    const path = files.file('login-table.log', log.text);
    const run = await runCli(['replay', '--config', files.dir + '/login.yaml', '--log', path, '--show-keys']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^limit +purpose +key +rate +checked +no key +would reject +share +decided +first trip$/m);
    expect(run.stdout).toMatch(new RegExp(`^login-ip +abuse +ip +5/15m +12 +0 +2 +16\\.7% +2 +${new Date(T0 + 40_000).toISOString()} \\(line ${log.firstTripLine}\\)$`, 'm'));
    expect(run.stdout).toContain(`login-ip: ${A} 2`);
    expect(run.stdout).toContain(`malformed: line ${log.malformedLine}: not a common or combined log line`);
    expect(run.stdout).toContain(`no route: line ${log.unroutedLine} GET /nowhere`);
  });
});

describe('replay: identity, tenant header, query keys, shadow limits (JSON lines)', () => {
  it('builds the context as the HTTP layer does', async () => {
    const reqs: Req[] = [];
    // alice: 7 logins within a minute (2 over 5 per 15 min); bob: 5.
    for (let i = 0; i < 7; i++) reqs.push({ time: T0 + i * 5000, method: 'POST', target: '/login', ip: A, principal: 'alice', status: 401 });
    for (let i = 0; i < 5; i++) reqs.push({ time: T0 + i * 5000 + 100, method: 'POST', target: '/login', ip: A, principal: 'bob', status: 401 });
    // acme: 4 searches in 10 s (1 over 3 per minute) through the x-tenant identity header; globex 3; carol logged as a principal
    // with acme's tenant counts as carol (a logged principal is the identity the server resolved).
    for (let i = 0; i < 4; i++) reqs.push({ time: T0 + i * 2500 + 200, method: 'GET', target: '/search?q=x', ip: B, tenant: 'acme' });
    for (let i = 0; i < 3; i++) reqs.push({ time: T0 + i * 2500 + 300, method: 'GET', target: '/search', ip: B, tenant: 'globex' });
    reqs.push({ time: T0 + 9000, method: 'GET', target: '/search', ip: B, tenant: 'acme', principal: 'carol' });
    // An anonymous search has no principal: search-tenant does not apply.
    reqs.push({ time: T0 + 9500, method: 'GET', target: '/search', ip: B });
    // export-user (shadow) on query.user: u1 3 times (1 over 2 per hour), u2 twice.
    for (let i = 0; i < 3; i++) reqs.push({ time: T0 + i * 1000 + 400, method: 'GET', target: '/export?user=u1&fmt=csv', ip: C });
    for (let i = 0; i < 2; i++) reqs.push({ time: T0 + i * 1000 + 500, method: 'GET', target: '/export?fmt=csv&user=u2', ip: C });
    reqs.sort((a, b) => a.time - b.time);
    const path = files.file('identity.jsonl', reqs.map(jsonLine).join('\n') + '\n');
    const r = report(await runCli(['replay', '--config', files.dir + '/identity.yaml', '--log', path, '--json', '--show-keys']));
    expect(r.log).toMatchObject({ records: reqs.length, malformed: 0 });
    expect(limit(r.contract, 'login-user')).toMatchObject({ checked: 12, wouldReject: 2, topKeys: [{ key: 'alice', rejections: 2, error: 0 }] });
    expect(limit(r.contract, 'search-tenant')).toMatchObject({ checked: 8, unkeyed: 1, wouldReject: 1, topKeys: [{ key: 'acme', rejections: 1, error: 0 }] });
    const exp = limit(r.contract, 'export-user');
    expect(exp).toMatchObject({ shadow: true, checked: 5, wouldReject: 1, decided: 0, topKeys: [{ key: 'u1', rejections: 1, error: 0 }] });
    // The shadow limit's would-reject is reported, not enforced.
    expect(r.contract.totals).toMatchObject({ rejected: 3, shadowRejected: 1, wouldReject: 4 });
    expect(r.notes).toContain('store shared is Redis; replayed on a memory store');
  });

  it('--tenant-header sends the tenant as another header', async () => {
    const cfg = files.file(
      'tenant-header.yaml',
      `limits:
  - { name: per-tenant, purpose: shedding, algorithm: sliding-log, limit: 1, window: 1m, key: header.x-org, reason: r }
routes:
  - { match: GET /, limits: [per-tenant] }
`,
    );
    const reqs: Req[] = [0, 1, 2].map((i) => ({ time: T0 + i * 1000, method: 'GET', target: '/', ip: A, tenant: 'acme' }));
    const path = files.file('tenant.jsonl', reqs.map(jsonLine).join('\n'));
    const without = report(await runCli(['replay', '--config', cfg, '--log', path, '--json', '--show-keys']));
    expect(limit(without.contract, 'per-tenant')).toMatchObject({ checked: 0, unkeyed: 3 });
    const withHeader = report(await runCli(['replay', '--config', cfg, '--log', path, '--json', '--show-keys', '--tenant-header', 'X-Org']));
    expect(limit(withHeader.contract, 'per-tenant')).toMatchObject({ checked: 3, wouldReject: 2, topKeys: [{ key: 'acme', rejections: 2 }] });
  });

  it('the demo contract without --config: body keys decide nothing, and the report says so', async () => {
    const path = files.file('demo.log', loginLog(combinedLine).text);
    const r = report(await runCli(['replay', '--log', path, '--json']));
    expect(r.contract.config).toBe('(built-in demo)');
    expect(limit(r.contract, 'login-account')).toMatchObject({ checked: 0, unkeyed: 12 });
    expect(limit(r.contract, 'login-ip')).toMatchObject({ checked: 12, wouldReject: 0 });
    expect(r.notes.some((n) => n.startsWith('login-account is keyed on body.username: a log has no request bodies'))).toBe(true);
  });
});

describe('replay --against: what the new contract rejects that the old did not', () => {
  const OLD = LOGIN_IP.replace('limit: 5', 'limit: 10');
  const NEW = `limits:
  - { name: login-ip, purpose: abuse, algorithm: sliding-log, limit: 5, window: 15m, key: ip, reason: r }
  - { name: search-ip, purpose: shedding, algorithm: sliding-log, limit: 2, window: 1m, key: ip, reason: r }
routes:
  - { match: POST /login, limits: [login-ip] }
  - { match: GET /search, limits: [search-ip] }
  - { match: GET /health, limits: [] }
`;
  const D = '203.0.113.4';
  // A: 7 logins (new rejects 2, old 0). C: 12 logins (new 7, old 2: 5 newly). D: 3 searches, a route only the new contract limits (1 newly).
  function log(): string {
    const reqs: Req[] = [];
    for (let i = 0; i < 7; i++) reqs.push({ time: T0 + i * 8000, method: 'POST', target: '/login', ip: A });
    for (let i = 0; i < 12; i++) reqs.push({ time: T0 + i * 7000 + 500, method: 'POST', target: '/login', ip: C });
    for (let i = 0; i < 3; i++) reqs.push({ time: T0 + i * 10_000 + 700, method: 'GET', target: '/search', ip: D });
    return reqs.sort((a, b) => a.time - b.time).map(combinedLine).join('\n') + '\n';
  }

  it('by limit and by key, in one pass, both ways', async () => {
    const oldPath = files.file('old.yaml', OLD);
    const newPath = files.file('new.yaml', NEW);
    const path = files.file('against.log', log());
    const r = report(await runCli(['replay', '--config', newPath, '--against', oldPath, '--log', path, '--json', '--show-keys']));
    const d = r.against;
    expect(d).not.toBeNull();
    expect(d?.config).toBe(oldPath);
    expect(d?.newlyRejected).toBe(8);
    expect(d?.newlyRejectedByLimit).toEqual([
      { limit: 'login-ip', requests: 7 },
      { limit: 'search-ip', requests: 1 },
    ]);
    expect(d?.newlyRejectedByKey).toEqual([
      { limit: 'login-ip', key: C, requests: 5, error: 0 },
      { limit: 'login-ip', key: A, requests: 2, error: 0 },
      { limit: 'search-ip', key: D, requests: 1, error: 0 },
    ]);
    expect(d?.noLongerRejected).toBe(0);
    // Each contract's own replay.
    expect(limit(r.contract, 'login-ip').wouldReject).toBe(9);
    expect(limit(d?.old as Report['contract'], 'login-ip').wouldReject).toBe(2);
    expect(d?.old.totals.unrouted).toBe(3);

    const back = report(await runCli(['replay', '--config', oldPath, '--against', newPath, '--log', path, '--json', '--show-keys']));
    expect(back.against).toMatchObject({ newlyRejected: 0, newlyRejectedByLimit: [], noLongerRejected: 8 });
    expect(back.against?.noLongerRejectedByLimit).toEqual([
      { limit: 'login-ip', requests: 7 },
      { limit: 'search-ip', requests: 1 },
    ]);

    const table = await runCli(['replay', '--config', newPath, '--against', oldPath, '--log', path, '--show-keys']);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain(`against ${oldPath}: 8 requests the new contract would reject that the old one did not; 0 the other way`);
    expect(table.stdout).toContain(`newly rejected by key: login-ip ${C} 5, login-ip ${A} 2, search-ip ${D} 1`);
  });

  it('hashes the difference with the same secret as the limits', async () => {
    const path = files.file('against-hash.log', log());
    const r = report(await runCli(['replay', '--config', files.file('new2.yaml', NEW), '--against', files.file('old2.yaml', OLD), '--log', path, '--json']));
    const fromLimits = new Set(limit(r.contract, 'login-ip').topKeys.map((k) => k.key));
    const fromDiff = (r.against?.newlyRejectedByKey ?? []).filter((k) => k.limit === 'login-ip').map((k) => k.key);
    expect(fromDiff).toHaveLength(2);
    for (const k of fromDiff) expect(fromLimits.has(k)).toBe(true);
  });
});

describe('replay: malformed lines never stop the run', () => {
  it('counts every kind with its line number and reason', async () => {
    const good = combinedLine({ time: T0, method: 'POST', target: '/login', ip: A });
    const lines = [
      good,
      'garbage',
      `${A} - - [99/Dec/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`,
      `${A} - - [01/Dec/2026:10:00:01 +0000] "-" 400 0 "-" "-"`,
      `${A} - - [01/Dec/2026:10:00:01 +0000] "\\x16\\x03\\x01" 400 0 "-" "-"`,
      'x'.repeat(70_000),
      '\u0000\u0001\u0002 binary',
      good.replace('10:00:00', '10:00:02'),
    ];
    const path = files.file('malformed.log', Buffer.concat([Buffer.from(lines.join('\n') + '\n'), Buffer.from([0xff, 0xfe, 0x0a])]));
    const r = report(await runCli(['replay', '--config', files.dir + '/login.yaml', '--log', path, '--json']));
    expect(r.log).toMatchObject({ lines: 9, records: 2, malformed: 7 });
    expect(r.log.malformedLines.map((m) => m.line)).toEqual([2, 3, 4, 5, 6, 7, 9]);
    expect(r.log.malformedLines[4]?.reason).toBe('longer than 65536 bytes');
    expect(limit(r.contract, 'login-ip').checked).toBe(2);
  });

  it('the table names the first ten malformed lines and how many more', async () => {
    const lines = [combinedLine({ time: T0, method: 'POST', target: '/login', ip: A }), ...Array.from({ length: 15 }, (_, i) => `junk ${i}`)];
    const path = files.file('many-malformed.log', lines.join('\n'));
    const run = await runCli(['replay', '--config', files.dir + '/login.yaml', '--log', path]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('malformed: line 2: not a common or combined log line; line 3:');
    expect(run.stdout).toContain('line 11: not a common or combined log line; 5 more');
  });
});

describe('replay: every mistake is its documented error, exit 2, one line, no stack', () => {
  let log: string;
  beforeAll(() => {
    log = files.file('ok.log', loginLog(combinedLine).text);
    files.file('bad-syntax.yaml', 'limits: [\n');
    files.file('bad-value.yaml', 'limits:\n  - { name: x, purpose: abuse, limit: 5, window: 15x, key: ip, reason: r }\nroutes: []\n');
    files.file('bad-route.yaml', 'limits: []\nroutes:\n  - { match: POST /login, limits: [nope] }\n');
    files.file('zero.log', '');
    files.file('blank.log', '\n\n\n');
    files.gzip('truncated.log.gz', loginLog(combinedLine).text.repeat(50));
  });

  /** Exit 2, and stderr's first line is `expected` (a string, or a pattern for messages with system text). */
  async function expectError(args: string[], expected: string | RegExp, usage = false): Promise<void> {
    const run = await runCli(['replay', ...args]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).not.toMatch(STACK_LINE);
    const [first, ...rest] = run.stderr.trimEnd().split('\n');
    if (typeof expected === 'string') expect(first).toBe(expected);
    else expect(first).toMatch(expected);
    // Usage mistakes are followed by the usage; unreadable input is the one line alone.
    if (usage) expect(rest.join('\n')).toContain('usage: ratecontract replay [options]');
    else expect(rest).toEqual([]);
  }

  const d = (): string => files.dir;

  it('a config file that is missing, not YAML, or invalid', async () => {
    await expectError(['--config', `${d()}/missing.yaml`, '--log', log], `ratecontract replay: ${d()}/missing.yaml: cannot read the file (ENOENT: no such file or directory)`);
    await expectError(['--config', `${d()}/bad-syntax.yaml`, '--log', log], new RegExp(`^ratecontract replay: ${d()}/bad-syntax\\.yaml: line 2, column 1: `));
    await expectError(
      ['--config', `${d()}/bad-value.yaml`, '--log', log],
      `ratecontract replay: ${d()}/bad-value.yaml: limits[0].window: "15x" is not a duration; expected one such as '500ms', '60s', '15m', '1h', '1d' or a number of milliseconds (line 2, column 42)`,
    );
    await expectError(['--config', `${d()}/bad-route.yaml`, '--log', log], new RegExp(`^ratecontract replay: ${d()}/bad-route\\.yaml: routes\\[0\\]\\.limits\\[0\\]: .*nope`));
    // --against reads its file the same way.
    await expectError(['--config', `${d()}/login.yaml`, '--against', `${d()}/bad-value.yaml`, '--log', log], new RegExp(`^ratecontract replay: ${d()}/bad-value\\.yaml: limits\\[0\\]\\.window: `));
  });

  it('a log that is missing, a folder, corrupt gzip, empty, or holds no request in its format', async () => {
    await expectError(['--log', `${d()}/missing.log`], `ratecontract replay: cannot read log ${d()}/missing.log: ENOENT: no such file or directory, open '${d()}/missing.log'`);
    await expectError(['--log', d()], `ratecontract replay: cannot read log ${d()}: EISDIR: illegal operation on a directory, read`);
    const gz = files.file('cut.log.gz', (await import('node:fs')).readFileSync(`${d()}/truncated.log.gz`).subarray(0, 200));
    await expectError(['--log', gz], `ratecontract replay: cannot read log ${gz} (gzip): unexpected end of file`);
    await expectError(['--log', `${d()}/zero.log`], `ratecontract replay: log ${d()}/zero.log holds no request: it is empty`);
    await expectError(['--log', `${d()}/blank.log`], `ratecontract replay: log ${d()}/blank.log holds no request: it is empty`);
    await expectError(['--log', log, '--format', 'json'], `ratecontract replay: log ${log} holds no request in json format: 15 malformed lines (line 1: not valid JSON)`);
  });

  it('bad usage names the option, with the usage after it', async () => {
    await expectError(['--config', `${d()}/login.yaml`], 'ratecontract replay: --log is required (--log FILE, or --log - for stdin)', true);
    await expectError(['--log', log, '--bogus'], 'ratecontract replay: unknown option --bogus', true);
    await expectError(['--log', log, '--format', 'xml'], 'ratecontract replay: --format must be one of auto, combined, json, got "xml"', true);
    await expectError(['--log', log, '--top', '0'], 'ratecontract replay: --top must be an integer from 1 to 100, got "0"', true);
    await expectError(['--log', log, '--json=1'], 'ratecontract replay: option --json takes no value', true);
    await expectError(['--log'], 'ratecontract replay: option --log needs a value (--log FILE)', true);
    await expectError(['--log', ''], 'ratecontract replay: --log needs a file name', true);
    await expectError(['--log', log, '--tenant-header', 'a b'], 'ratecontract replay: --tenant-header must be a header name, got "a b"', true);
    // One argument is the contract (replay FILE is replay --config FILE); a second is refused.
    await expectError(['--log', log, `${d()}/login.yaml`, 'extra'], 'ratecontract replay: unexpected argument "extra": give one FILE', true);
    await expectError(['--log', log, `${d()}/login.yaml`, '--config', `${d()}/bad-value.yaml`], `ratecontract replay: two files given: "${d()}/login.yaml" (FILE) and --config "${d()}/bad-value.yaml"; give one`, true);
  });

  it('--help prints the usage and exits 0, whatever else is on the line', async () => {
    for (const args of [['--help'], ['-h'], ['--bogus', '--help']]) {
      const run = await runCli(['replay', ...args]);
      expect(run.code).toBe(0);
      expect(run.stderr).toBe('');
      expect(run.stdout).toMatch(/^usage: ratecontract replay \[options\] \[FILE\]\n/);
      for (const flag of ['--config FILE', '--log FILE', '--format NAME', '--against OLD_FILE', '--json', '--show-keys', '--top N', '--tenant-header NAME']) expect(run.stdout).toContain(flag);
    }
    const help = await runCli(['help', 'replay']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: ratecontract replay/);
    const list = await runCli(['help']);
    expect(list.stdout).toMatch(/^ {2}replay +replay an access log/m);
  });
});
