import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * scripts/ensure-redis.sh (npm test's pretest) and scripts/ensure-chromium.sh
 * say what they will install before installing it, and RATECONTRACT_NO_INSTALL=1
 * makes them fail instead, naming what is missing. Run with bash on a PATH of
 * the test's own: the system's installer is stood in for by an `apt-get` that
 * records its arguments (and can "install" by creating the binaries), and `id`
 * by one that prints the uid the case needs. Nothing is installed.
 */

const SCRIPTS = fileURLToPath(new URL('../../../scripts/', import.meta.url));
const BASH = '/bin/bash';

let bin = '';
let calls = '';
beforeEach(() => {
  bin = mkdtempSync(join(tmpdir(), 'rc-ensure-'));
  calls = join(bin, 'apt-calls.txt');
});
afterEach(() => {
  rmSync(bin, { recursive: true, force: true });
});

function executable(name: string, body: string): void {
  writeFileSync(join(bin, name), `#!${BASH}\n${body}\n`);
  chmodSync(join(bin, name), 0o755);
}

/** A fake apt-get: logs each call, says so on stderr, and for `install` creates `creates` in the bin dir. */
function fakeAptGet(creates: readonly string[]): void {
  const make = creates.map((c) => `printf '#!${BASH}\\n' > '${join(bin, c)}'; /bin/chmod +x '${join(bin, c)}'`).join('\n');
  executable('apt-get', `echo "$*" >> '${calls}'\necho "fake apt-get $1" >&2\nif [ "$1" = install ]; then\n${make}\nfi`);
}

function run(script: string, env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string; apt: string[] } {
  const r = spawnSync(BASH, [join(SCRIPTS, script)], { env: { PATH: bin, ...env }, encoding: 'utf8', timeout: 20_000 });
  const apt = existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n') : [];
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, apt };
}

describe('scripts/ensure-redis.sh', () => {
  it('all three binaries on PATH: exit 0, silent, nothing installed', () => {
    for (const b of ['redis-server', 'redis-cli', 'redis-sentinel']) executable(b, 'exit 0');
    executable('id', 'echo 0');
    fakeAptGet([]);
    expect(run('ensure-redis.sh')).toEqual({ code: 0, stdout: '', stderr: '', apt: [] });
  });

  it('as root with apt-get: names the missing binaries and the packages before installing only those', () => {
    executable('redis-server', 'exit 0');
    executable('redis-cli', 'exit 0');
    executable('id', 'echo 0');
    fakeAptGet(['redis-sentinel']);
    const r = run('ensure-redis.sh');
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe("ensure-redis: missing redis-sentinel; installing Debian's package redis-sentinel with apt-get (set RATECONTRACT_NO_INSTALL=1 to skip this)");
    // The announcement comes before the installer runs.
    expect(lines.slice(1)).toEqual(['fake apt-get update', 'fake apt-get install']);
    expect(r.apt).toEqual(['update -qq', 'install -y -qq redis-sentinel']);
  });

  it('nothing there: all three named, and the packages that hold them (redis-cli is in redis-tools)', () => {
    executable('id', 'echo 0');
    fakeAptGet(['redis-server', 'redis-cli', 'redis-sentinel']);
    const r = run('ensure-redis.sh');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.split('\n')[0]).toBe(
      "ensure-redis: missing redis-server, redis-cli, redis-sentinel; installing Debian's packages redis-server redis-tools redis-sentinel with apt-get (set RATECONTRACT_NO_INSTALL=1 to skip this)",
    );
    expect(r.apt).toEqual(['update -qq', 'install -y -qq redis-server redis-tools redis-sentinel']);
  });

  it('RATECONTRACT_NO_INSTALL=1: exit 1 naming the missing binaries; apt-get never runs', () => {
    executable('redis-cli', 'exit 0');
    executable('id', 'echo 0');
    fakeAptGet([]);
    const r = run('ensure-redis.sh', { RATECONTRACT_NO_INSTALL: '1' });
    expect(r.code).toBe(1);
    expect(r.apt).toEqual([]);
    expect(r.stderr).toBe(
      'ensure-redis: the tests need redis-server, redis-cli and redis-sentinel on PATH; missing redis-server, redis-sentinel. ' +
        'Not installing them (RATECONTRACT_NO_INSTALL=1). Debian/Ubuntu: apt-get install redis-server redis-sentinel\n',
    );
  });

  it('not root: exit 1 naming the missing binaries and the command to run; apt-get never runs', () => {
    executable('id', 'echo 1000');
    fakeAptGet([]);
    const r = run('ensure-redis.sh');
    expect(r.code).toBe(1);
    expect(r.apt).toEqual([]);
    expect(r.stderr).toContain('missing redis-server, redis-cli, redis-sentinel');
    expect(r.stderr).toContain('apt-get install redis-server redis-tools redis-sentinel');
  });

  it('an install that leaves a binary missing fails, naming it', () => {
    executable('id', 'echo 0');
    fakeAptGet(['redis-server', 'redis-cli']);
    const r = run('ensure-redis.sh');
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n').at(-1)).toBe('ensure-redis: still missing after apt-get: redis-sentinel');
  });
});

describe('scripts/ensure-valkey.sh', () => {
  /** A fake system: os-release with `codename`, an apt sources dir (holding `sources` if given) and no /etc/apt/sources.list. */
  function system(codename: string, sources?: string): Record<string, string> {
    const dir = join(bin, 'sources.list.d');
    mkdirSync(dir);
    if (sources !== undefined) writeFileSync(join(dir, 'debian.sources'), sources);
    writeFileSync(join(bin, 'os-release'), `ID=debian\nVERSION_CODENAME=${codename}\n`);
    return { RATECONTRACT_APT_SOURCES_DIR: dir, RATECONTRACT_APT_SOURCES_LIST: join(bin, 'no-sources.list'), RATECONTRACT_OS_RELEASE: join(bin, 'os-release') };
  }

  it('both binaries on PATH: exit 0, silent, nothing installed', () => {
    for (const b of ['valkey-server', 'valkey-cli']) executable(b, 'exit 0');
    executable('id', 'echo 0');
    fakeAptGet([]);
    expect(run('ensure-valkey.sh', system('bookworm'))).toEqual({ code: 0, stdout: '', stderr: '', apt: [] });
  });

  it('Debian bookworm as root: adds bookworm-backports to the sources, says so, then installs from it', () => {
    executable('id', 'echo 0');
    fakeAptGet(['valkey-server', 'valkey-cli']);
    const env = system('bookworm', 'Types: deb\nSuites: bookworm bookworm-updates\n');
    const r = run('ensure-valkey.sh', env);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe(
      `ensure-valkey: Debian bookworm ships Valkey in bookworm-backports; adding 'deb http://deb.debian.org/debian bookworm-backports main' as ${env.RATECONTRACT_APT_SOURCES_DIR as string}/bookworm-backports.list`,
    );
    expect(lines[1]).toBe("ensure-valkey: missing valkey-server, valkey-cli; installing Debian's packages valkey-server valkey-tools with apt-get -t bookworm-backports (set RATECONTRACT_NO_INSTALL=1 to skip this)");
    expect(readFileSync(join(env.RATECONTRACT_APT_SOURCES_DIR as string, 'bookworm-backports.list'), 'utf8')).toBe('deb http://deb.debian.org/debian bookworm-backports main\n');
    expect(r.apt).toEqual(['update -qq', 'install -y -qq -t bookworm-backports valkey-server valkey-tools']);
  });

  it('bookworm-backports already a source: not added again; only the missing binary\'s package is installed', () => {
    executable('valkey-server', 'exit 0');
    executable('id', 'echo 0');
    fakeAptGet(['valkey-cli']);
    const env = system('bookworm', 'Types: deb\nSuites: bookworm-backports\n');
    const r = run('ensure-valkey.sh', env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.trim().split('\n')[0]).toBe("ensure-valkey: missing valkey-cli; installing Debian's package valkey-tools with apt-get -t bookworm-backports (set RATECONTRACT_NO_INSTALL=1 to skip this)");
    expect(existsSync(join(env.RATECONTRACT_APT_SOURCES_DIR as string, 'bookworm-backports.list'))).toBe(false);
    expect(r.apt).toEqual(['update -qq', 'install -y -qq -t bookworm-backports valkey-tools']);
  });

  it('a release whose archive has Valkey (trixie): installs from it, no backports', () => {
    executable('id', 'echo 0');
    fakeAptGet(['valkey-server', 'valkey-cli']);
    const r = run('ensure-valkey.sh', system('trixie'));
    expect(r.code, r.stderr).toBe(0);
    expect(r.apt).toEqual(['update -qq', 'install -y -qq valkey-server valkey-tools']);
  });

  it('RATECONTRACT_NO_INSTALL=1: exit 1 naming the missing binaries and the steps; apt-get never runs, no source is added', () => {
    executable('id', 'echo 0');
    fakeAptGet([]);
    const env = system('bookworm');
    const r = run('ensure-valkey.sh', { ...env, RATECONTRACT_NO_INSTALL: '1' });
    expect(r.code).toBe(1);
    expect(r.apt).toEqual([]);
    expect(r.stderr).toBe(
      'ensure-valkey: the Valkey pass needs valkey-server and valkey-cli on PATH; missing valkey-server, valkey-cli. Not installing them (RATECONTRACT_NO_INSTALL=1). ' +
        `Debian/Ubuntu: add 'deb http://deb.debian.org/debian bookworm-backports main' to ${env.RATECONTRACT_APT_SOURCES_DIR as string}, apt-get update, apt-get install -t bookworm-backports valkey-server valkey-tools\n`,
    );
    expect(existsSync(join(env.RATECONTRACT_APT_SOURCES_DIR as string, 'bookworm-backports.list'))).toBe(false);
  });

  it('not root: exit 1 with the command to run; apt-get never runs', () => {
    executable('id', 'echo 1000');
    fakeAptGet([]);
    const r = run('ensure-valkey.sh', system('trixie'));
    expect(r.code).toBe(1);
    expect(r.apt).toEqual([]);
    expect(r.stderr).toContain('missing valkey-server, valkey-cli');
    expect(r.stderr).toContain('as root: apt-get install valkey-server valkey-tools');
  });

  it('an install that leaves a binary missing fails, naming it', () => {
    executable('id', 'echo 0');
    fakeAptGet(['valkey-server']);
    const r = run('ensure-valkey.sh', system('trixie'));
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n').at(-1)).toBe('ensure-valkey: still missing after apt-get: valkey-cli');
  });
});

describe('scripts/ensure-chromium.sh', () => {
  it('the browser present: exit 0, silent', () => {
    executable('chromium', 'exit 0');
    executable('id', 'echo 0');
    fakeAptGet([]);
    expect(run('ensure-chromium.sh', { RATECONTRACT_CHROMIUM: join(bin, 'chromium') })).toEqual({ code: 0, stdout: '', stderr: '', apt: [] });
  });

  it('as root with apt-get: says what it installs before installing it', () => {
    executable('id', 'echo 0');
    fakeAptGet(['chromium']);
    const r = run('ensure-chromium.sh', { RATECONTRACT_CHROMIUM: join(bin, 'chromium') });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe(`ensure-chromium: missing ${join(bin, 'chromium')}; installing Debian's package chromium with apt-get (set RATECONTRACT_NO_INSTALL=1 to skip this)`);
    expect(lines.slice(1)).toEqual(['fake apt-get update', 'fake apt-get install']);
    expect(r.apt).toEqual(['update -qq', 'install -y -qq chromium']);
  });

  it('RATECONTRACT_NO_INSTALL=1: exit 1 naming the missing browser; apt-get never runs', () => {
    executable('id', 'echo 0');
    fakeAptGet([]);
    const r = run('ensure-chromium.sh', { RATECONTRACT_NO_INSTALL: '1', RATECONTRACT_CHROMIUM: join(bin, 'chromium') });
    expect(r.code).toBe(1);
    expect(r.apt).toEqual([]);
    expect(r.stderr).toBe(
      `ensure-chromium: the browser test needs ${join(bin, 'chromium')}; it is missing. Not installing it (RATECONTRACT_NO_INSTALL=1). Debian/Ubuntu: apt-get install chromium\n`,
    );
  });
});
