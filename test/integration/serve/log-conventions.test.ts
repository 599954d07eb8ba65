/**
 * What `serve` and `rls` tell an operator, read from the spawned servers:
 * the `--log-level` values `--help` lists are the ones docs/serve.md and
 * docs/rls.md list and the ones the servers take; both log the drain's
 * requests in flight as `inFlight` (every log field is camelCase); and a
 * refused reload, of the demo (no file) or of a bad file, is a warning
 * (pino level 40) on both servers: the previous contract keeps running, so
 * nothing failed, but the change the operator asked for did not happen.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli, serve, spawnCli, type LogLine } from './helpers.js';

const WARN = 40;

/** The values listed on the `--log-level` line of a command's `--help`. */
function helpLevels(help: string): string[] {
  const line = help.split('\n').find((l) => l.trimStart().startsWith('--log-level'));
  if (line === undefined) throw new Error(`no --log-level in:\n${help}`);
  const list = /--log-level L\s+(.*?) \(default info\)$/.exec(line)?.[1] ?? '';
  return list.split(/, | or /);
}

/** The values in a doc's `--log-level` table row: every `code` span after the default. */
function docLevels(doc: string): string[] {
  const row = doc.split('\n').find((l) => l.startsWith('| `--log-level L`'));
  if (row === undefined) throw new Error('no --log-level row');
  const cells = row.split('|').map((c) => c.trim());
  return [...(cells[3] ?? '').matchAll(/`([a-z]+)`/g)].map((m) => m[1] as string);
}

/** Every key of every log line, nested objects included. */
function keys(lines: readonly LogLine[]): Set<string> {
  const out = new Set<string>();
  const walk = (v: unknown): void => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return;
    for (const [k, inner] of Object.entries(v)) {
      out.add(k);
      walk(inner);
    }
  };
  for (const l of lines) walk(l);
  return out;
}

describe('--log-level: one list, in --help, the docs and the parser', () => {
  it.each([
    ['serve', 'docs/serve.md'],
    ['rls', 'docs/rls.md'],
  ])('%s --help lists what %s lists, and each value is taken', async (command, docPath) => {
    const help = await runCli([command, '--help']);
    expect(help.code).toBe(0);
    const listed = helpLevels(help.stdout);
    expect(listed).toEqual(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
    expect(docLevels(readFileSync(join(ROOT, docPath), 'utf8'))).toEqual(listed);
    const refused = await runCli([command, '--log-level', 'verbose']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`--log-level must be one of ${listed.join(', ')}, got "verbose"`);
  });

  it('serve takes every listed level (silent: no log line at all)', async () => {
    const s = await serve(['--port', '0', '--admin-port', '0', '--log-level', 'silent']);
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    // No log line carries the pid, so the signal goes to the `timeout` wrapper, which passes it on.
    await s.stop();
    expect(s.logs).toEqual([]);
  });
});

describe('the drain and the reloads, as both servers log them', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rc-logs-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('serve: a refused reload of the demo (SIGHUP, no file) and of a bad file are warnings; the drain counts inFlight', async () => {
    const demo = spawnCli(['serve', '--port', '0', '--admin-port', '0']);
    let code: number | null = null;
    try {
      // At once after the startup line, before the banner: a SIGHUP then is held and replayed, never fatal.
      await demo.waitForLog((l) => l.event === 'startup', 20_000);
      demo.signal('SIGHUP');
      const refused = await demo.waitForLog((l) => l.event === 'reload');
      expect(refused).toMatchObject({ level: WARN, ok: false, reason: 'SIGHUP', error: 'the built-in demo contract has no file to reload' });
    } finally {
      code = await demo.stop();
    }
    expect(code).toBe(0);
    expect(demo.logs.find((l) => l.event === 'draining')).toMatchObject({ reason: 'SIGTERM', inFlight: 0 });

    const file = join(dir, 'c.yaml');
    writeFileSync(file, 'limits:\n  - { name: a, purpose: shedding, limit: 2, window: 1m, key: ip }\nroutes:\n  - { match: GET /a, limits: [a] }\n');
    const s = await serve(['--config', file, '--port', '0', '--admin-port', '0']);
    try {
      writeFileSync(file, 'limits: [');
      s.signal('SIGHUP');
      expect(await s.waitForLog((l) => l.event === 'reload')).toMatchObject({ level: WARN, ok: false, reason: 'SIGHUP', kept: 'the previous config' });
    } finally {
      code = await s.stop();
    }
    expect(code).toBe(0);
    for (const k of keys([...demo.logs, ...s.logs])) expect(k).toMatch(/^[a-z][a-zA-Z0-9]*$/);
  });

  it('rls: a refused reload is a warning; the drain counts inFlight, as serve does', async () => {
    const conf = mkdtempSync(join(dir, 'rls-'));
    writeFileSync(join(conf, 'app.yaml'), 'domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n');
    let code: number | null = null;
    const r = spawnCli(['rls', '--config', conf, '--grpc-port', '0', '--http-port', '0', '--no-watch']);
    try {
      await r.waitForLog((l) => l.event === 'startup', 20_000);
      writeFileSync(join(conf, 'bad.yaml'), 'domain: bad\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n');
      r.signal('SIGHUP');
      expect(await r.waitForLog((l) => l.event === 'reload')).toMatchObject({ level: WARN, ok: false, reason: 'SIGHUP', kept: 'the previous config' });
    } finally {
      code = await r.stop();
    }
    expect(code).toBe(0);
    const drain = r.logs.find((l) => l.event === 'draining');
    expect(drain).toMatchObject({ reason: 'SIGTERM', inFlight: 0 });
    expect(drain).not.toHaveProperty('inflight');
    for (const k of keys(r.logs)) expect(k).toMatch(/^[a-z][a-zA-Z0-9]*$/);
  });
});
