/**
 * One host, two servers: the same assertions against `ratecontract serve`
 * and `ratecontract rls`, each spawned as a user runs it. Their admin ports
 * answer the same paths with the same statuses, content types and problem
 * bodies; a changed config file (saved in place, renamed over by an
 * editor's atomic save, swapped through a symlink as a Kubernetes ConfigMap
 * does) reloads them alike, a bad one is refused alike; SIGHUP reloads
 * (held while the server starts); SIGTERM drains a request in flight,
 * answers `/readyz` 503 while it does, and the drain bound cuts what stays.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCli, type LogLine, type Spawned } from '../serve/helpers.js';

/** One server as this test drives it. */
interface Subject {
  readonly command: 'serve' | 'rls';
  /** The command's arguments on a config file, every port free, watching the file. */
  args(file: string): string[];
  /** Config texts with 1, 2 and 3 rows in `/contract`. */
  readonly versions: readonly [string, string, string];
  /** A config that cannot be loaded. */
  readonly bad: string;
  /** Path and body of a POST the server answers only once the whole body came. */
  readonly slow: { readonly path: string; readonly body: string };
}

const SERVE_LIMIT = (name: string): string => `  - { name: ${name}, purpose: shedding, limit: 100, window: 1m, key: body.k }\n`;
const serveConfig = (names: string[]): string => `limits:\n${names.map(SERVE_LIMIT).join('')}routes:\n  - { match: POST /slow, limits: [${names.join(', ')}] }\n`;
const RLS_RULE = (key: string): string => `  - key: ${key}\n    rate_limit: { unit: minute, requests_per_unit: 100 }\n`;
const rlsConfig = (keys: string[]): string => `domain: app\ndescriptors:\n${keys.map(RLS_RULE).join('')}`;

const SUBJECTS: readonly Subject[] = [
  {
    command: 'serve',
    args: (file) => ['serve', '--config', file, '--watch', '--port', '0', '--admin-port', '0'],
    versions: [serveConfig(['one']), serveConfig(['one', 'two']), serveConfig(['one', 'two', 'three'])],
    bad: 'limits: [',
    slow: { path: '/slow', body: JSON.stringify({ k: 'a', pad: 'x'.repeat(64) }) },
  },
  {
    command: 'rls',
    // rls watches by default.
    args: (file) => ['rls', '--config', file, '--grpc-port', '0', '--http-port', '0', '--admin-port', '0'],
    versions: [rlsConfig(['one']), rlsConfig(['one', 'two']), rlsConfig(['one', 'two', 'three'])],
    bad: 'domain: app\ndescriptors: [',
    slow: { path: '/json', body: JSON.stringify({ domain: 'app', descriptors: [{ entries: [{ key: 'one', value: 'a' }] }] }) },
  },
];

interface Running extends Spawned {
  readonly url: string;
  readonly adminUrl: string;
}

/** Spawns the server; `onStartup` runs at its startup line (before it prints where it listens). Resolves once both URLs are printed. */
async function start(args: string[], onStartup?: (s: Spawned) => void): Promise<Running> {
  const s = spawnCli(args);
  await s.waitForLog((l) => l.event === 'startup', 20_000);
  onStartup?.(s);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const url = /^listening (http:\/\/\S+)$/m.exec(s.stderr())?.[1];
    const adminUrl = /^admin (http:\/\/\S+)/m.exec(s.stderr())?.[1];
    if (url !== undefined && adminUrl !== undefined) return { ...s, url, adminUrl };
    if (Date.now() > deadline || s.proc.exitCode !== null) throw new Error(`no listening and admin lines; stderr: ${s.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface Answer {
  readonly status: number;
  readonly type: string | null;
  readonly cache: string | null;
  readonly allow: string | null;
  readonly text: string;
}

async function ask(url: string, method = 'GET'): Promise<Answer> {
  const r = await fetch(url, { method });
  return { status: r.status, type: r.headers.get('content-type'), cache: r.headers.get('cache-control'), allow: r.headers.get('allow'), text: await r.text() };
}

async function rows(adminUrl: string): Promise<number> {
  const doc = JSON.parse((await ask(`${adminUrl}/contract`)).text) as { rows: unknown[] };
  return doc.rows.length;
}

/** A POST whose body is sent in two parts: the first now, the rest when `finish` is called. */
function slowPost(url: string, body: string): { finish(): void; answer: Promise<{ status: number; text: string }>; req: ClientRequest } {
  const target = new URL(url);
  const req = request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } });
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', (res: IncomingMessage) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  const half = Math.floor(body.length / 2);
  req.write(body.slice(0, half));
  return { finish: () => req.end(body.slice(half)), answer, req };
}

/** Resolves once `/readyz` reports `n` requests in flight. */
async function untilInFlight(adminUrl: string, n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const body = JSON.parse((await ask(`${adminUrl}/readyz`)).text) as { inFlight?: number };
    if (body.inFlight === n) return;
    if (Date.now() > deadline) throw new Error(`/readyz never reported ${n} in flight: ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const reloadsOf = (logs: readonly LogLine[]): LogLine[] => logs.filter((l) => l.event === 'reload');

describe.each(SUBJECTS)('ratecontract $command on the shared host', (subject) => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), `rc-host-${subject.command}-`));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  describe('admin port, reloads and SIGHUP', () => {
    let s: Running;
    let file: string;
    beforeAll(async () => {
      const folder = join(dir, 'reload');
      mkdirSync(folder);
      file = join(folder, 'c.yaml');
      writeFileSync(file, subject.versions[0]);
      // A SIGHUP at the startup line, before the server says where it listens, is held and taken: never fatal.
      s = await start(subject.args(file), (p) => p.signal('SIGHUP'));
    });
    afterAll(async () => {
      expect(await s?.stop()).toBe(0);
    });

    it('a SIGHUP while it starts is held and taken as a reload', async () => {
      expect(await s.waitForLog((l) => l.event === 'reload')).toMatchObject({ level: 30, ok: true, reason: 'SIGHUP', config: file });
      expect(s.proc.exitCode).toBeNull();
    });

    it('answers the admin paths with the same statuses, types and bodies', async () => {
      const page = await ask(`${s.adminUrl}/`);
      expect([page.status, page.type, page.cache]).toEqual([200, 'text/html; charset=utf-8', 'no-store']);
      expect(page.text.startsWith('<!doctype html>')).toBe(true);

      const metrics = await ask(`${s.adminUrl}/metrics`);
      expect([metrics.status, metrics.type, metrics.cache]).toEqual([200, 'text/plain; version=0.0.4; charset=utf-8', 'no-store']);
      for (const series of ['ratecontract_config_reloads_total', 'ratecontract_config_load_errors_total', 'ratecontract_decisions_total', 'ratecontract_breaker_open']) expect(metrics.text).toContain(series);

      const contract = await ask(`${s.adminUrl}/contract`);
      expect([contract.status, contract.type, contract.cache]).toEqual([200, 'application/json', 'no-store']);
      const doc = JSON.parse(contract.text) as { rows: unknown; findings: unknown };
      expect(Array.isArray(doc.rows) && Array.isArray(doc.findings)).toBe(true);

      const stats = await ask(`${s.adminUrl}/stats.json`);
      expect([stats.status, stats.type, stats.cache]).toEqual([200, 'application/json', 'no-store']);
      expect((JSON.parse(stats.text) as { limits: unknown[] }).limits).toHaveLength(1);

      // No limit is in shadow here: an empty report, in the same shape.
      const shadow = await ask(`${s.adminUrl}/shadow.json`);
      expect([shadow.status, shadow.type, shadow.cache]).toEqual([200, 'application/json', 'no-store']);
      expect((JSON.parse(shadow.text) as { limits: unknown[] }).limits).toEqual([]);

      const health = await ask(`${s.adminUrl}/healthz`);
      expect([health.status, health.type, JSON.parse(health.text)]).toEqual([200, 'application/json', { status: 'ok' }]);
      const ready = await ask(`${s.adminUrl}/readyz`);
      expect([ready.status, ready.type]).toEqual([200, 'application/json']);
      expect(JSON.parse(ready.text)).toEqual({ ready: true, draining: false, inFlight: 0, stores: expect.any(Object) as object });

      const head = await ask(`${s.adminUrl}/healthz`, 'HEAD');
      expect([head.status, head.text]).toEqual([200, '']);

      for (const [method, path] of [['POST', '/metrics'], ['PUT', '/'], ['DELETE', '/contract'], ['POST', '/nope']] as const) {
        const refused = await ask(`${s.adminUrl}${path}`, method);
        expect([refused.status, refused.type, refused.allow, refused.cache], `${method} ${path}`).toEqual([405, 'application/problem+json', 'GET, HEAD', 'no-store']);
        expect(JSON.parse(refused.text)).toEqual({ type: 'about:blank', title: 'Method Not Allowed', status: 405 });
      }
      const missing = await ask(`${s.adminUrl}/nope`);
      expect([missing.status, missing.type, missing.cache]).toEqual([404, 'application/problem+json', 'no-store']);
      expect(JSON.parse(missing.text)).toEqual({ type: 'about:blank', title: 'Not Found', status: 404 });
    });

    it('reloads a file saved in place, and an atomic save (written aside, renamed over)', async () => {
      await s.waitForLog((l) => l.event === 'reload');
      const before = reloadsOf(s.logs).length;
      // Another file of the same folder changing reloads nothing.
      writeFileSync(join(dir, 'reload', 'notes.txt'), 'not the config');
      writeFileSync(file, subject.versions[1]);
      expect(await s.waitForLog((l) => l.event === 'reload' && reloadsOf(s.logs).indexOf(l) >= before)).toMatchObject({ ok: true, reason: 'watch', config: file });
      expect(await rows(s.adminUrl)).toBe(2);

      const aside = join(dir, 'reload', '.c.yaml.swp');
      writeFileSync(aside, subject.versions[2]);
      renameSync(aside, file);
      expect(await s.waitForLog((l) => l.event === 'reload' && reloadsOf(s.logs).indexOf(l) >= before + 1)).toMatchObject({ ok: true, reason: 'watch' });
      expect(await rows(s.adminUrl)).toBe(3);
      expect(reloadsOf(s.logs)).toHaveLength(before + 2);
    });

    it('refuses a bad file as a warning, keeps the config in force, and counts it', async () => {
      const before = reloadsOf(s.logs).length;
      writeFileSync(file, subject.bad);
      const refused = await s.waitForLog((l) => l.event === 'reload' && reloadsOf(s.logs).indexOf(l) >= before);
      expect(refused).toMatchObject({ level: 40, ok: false, reason: 'watch', config: file, kept: 'the previous config' });
      expect(String(refused.error)).toContain(file);
      expect(await rows(s.adminUrl)).toBe(3);
      const metrics = (await ask(`${s.adminUrl}/metrics`)).text;
      expect(metrics).toContain('ratecontract_config_reloads_total{result="refused"} 1');
      expect(metrics).toContain('ratecontract_config_load_errors_total 1');
      expect(metrics).toContain('ratecontract_config_reloads_total{result="ok"} 3');
    });

    it('SIGHUP reloads the file', async () => {
      writeFileSync(file, subject.versions[0]);
      await s.waitForLog((l) => l.event === 'reload' && l.ok === true && reloadsOf(s.logs).indexOf(l) >= 4);
      const before = reloadsOf(s.logs).length;
      s.signal('SIGHUP');
      expect(await s.waitForLog((l) => l.event === 'reload' && reloadsOf(s.logs).indexOf(l) >= before)).toMatchObject({ ok: true, reason: 'SIGHUP' });
      expect(await rows(s.adminUrl)).toBe(1);
    });
  });

  it('follows a ConfigMap-style symlink swap of the file', async () => {
    const mount = join(dir, 'configmap');
    mkdirSync(join(mount, '..v1'), { recursive: true });
    writeFileSync(join(mount, '..v1', 'c.yaml'), subject.versions[0]);
    symlinkSync('..v1', join(mount, '..data'));
    symlinkSync(join('..data', 'c.yaml'), join(mount, 'c.yaml'));
    const s = await start(subject.args(join(mount, 'c.yaml')));
    try {
      expect(await rows(s.adminUrl)).toBe(1);
      mkdirSync(join(mount, '..v2'));
      writeFileSync(join(mount, '..v2', 'c.yaml'), subject.versions[1]);
      symlinkSync('..v2', join(mount, '..data_tmp'));
      renameSync(join(mount, '..data_tmp'), join(mount, '..data'));
      expect(await s.waitForLog((l) => l.event === 'reload')).toMatchObject({ ok: true, reason: 'watch' });
      expect(await rows(s.adminUrl)).toBe(2);
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });

  it('SIGTERM drains a request in flight: /readyz 503 while it does, the request answered, exit 0', async () => {
    const file = join(dir, 'drain.yaml');
    writeFileSync(file, subject.versions[0]);
    const s = await start(subject.args(file));
    try {
      const post = slowPost(`${s.url}${subject.slow.path}`, subject.slow.body);
      await untilInFlight(s.adminUrl, 1);
      s.signal('SIGTERM');
      expect(await s.waitForLog((l) => l.event === 'draining')).toMatchObject({ reason: 'SIGTERM', inFlight: 1 });
      const ready = await ask(`${s.adminUrl}/readyz`);
      expect(ready.status).toBe(503);
      expect(JSON.parse(ready.text)).toMatchObject({ ready: false, draining: true, inFlight: 1 });
      post.finish();
      const answer = await post.answer;
      expect(answer.status).toBe(200);
      expect(await s.exited).toBe(0);
      const stopped = s.logs.find((l) => l.event === 'stopped');
      expect(stopped).toMatchObject({ reason: 'SIGTERM' });
      expect(stopped).not.toHaveProperty('cutInFlight');
      await expect(fetch(`${s.adminUrl}/healthz`)).rejects.toThrow();
    } finally {
      await s.stop();
    }
  });

  it('the drain bound cuts a request that does not finish, and says so', async () => {
    const file = join(dir, 'cut.yaml');
    writeFileSync(file, subject.versions[0]);
    const s = await start([...subject.args(file), '--drain-timeout', '300ms']);
    try {
      const post = slowPost(`${s.url}${subject.slow.path}`, subject.slow.body);
      post.answer.catch(() => undefined);
      await untilInFlight(s.adminUrl, 1);
      s.signal('SIGTERM');
      expect(await s.exited).toBe(0);
      expect(s.logs.find((l) => l.event === 'stopped')).toMatchObject({ reason: 'SIGTERM', cutInFlight: 1 });
      await expect(post.answer).rejects.toThrow();
      post.req.destroy();
    } finally {
      await s.stop();
    }
  });
});
