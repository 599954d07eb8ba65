/**
 * The two packages as users install them, from their packed tarballs, with
 * npm from the registry (integration tier: it downloads the dependencies).
 *
 * - The library (`ratecontract`), installed without dev and peer
 *   dependencies: at most 3 packages and 2 MB on disk, a tarball of at most
 *   400 kB, at most 2 runtime dependencies; then imported and asked for a
 *   decision by a plain script.
 * - The servers and tools (`@ratecontract/cli`) beside it: `npx ratecontract`
 *   answers `--version`, checks a contract, and `serve` answers on port 0.
 *
 * Needs the packages built (`npm test` builds first).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempProject } from '../../helpers/packed.js';
import { CLI_DIR, LIB_DIR, ROOT } from '../../helpers/paths.js';

const MAX_PACKAGES = 3;
const MAX_INSTALL_BYTES = 2 * 1024 * 1024;
const MAX_TARBALL_BYTES = 400 * 1000;
const MAX_RUNTIME_DEPENDENCIES = 2;

interface Packed {
  readonly filename: string;
  readonly size: number;
  readonly entryCount: number;
}

function pack(dir: string, into: string): Packed & { path: string } {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', into], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 120_000 });
  const p = (JSON.parse(out) as Packed[])[0] as Packed;
  return { ...p, path: join(into, p.filename) };
}

function npmInstall(dir: string, args: readonly string[]): void {
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', ...args], { cwd: dir, encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`npm install ${args.join(' ')} failed (exit ${String(r.status)}):\n${r.stdout}\n${r.stderr}`);
}

/** The installed packages under `node_modules` (each folder with a package.json; scoped ones counted one by one). */
function installedPackages(nodeModules: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, scope: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name.startsWith('.') || !e.isDirectory()) continue;
      const path = join(dir, e.name);
      if (e.name.startsWith('@')) walk(path, `${e.name}/`);
      else if (existsSync(join(path, 'package.json'))) {
        out.push(`${scope}${e.name}`);
        if (existsSync(join(path, 'node_modules'))) walk(join(path, 'node_modules'), '');
      }
    }
  };
  walk(nodeModules, '');
  return out.sort();
}

/** Bytes on disk of every file under `dir` (what `du --apparent-size` adds up). */
function bytesUnder(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) n += bytesUnder(path);
    else if (e.isFile()) n += statSync(path).size;
  }
  return n;
}

function run(dir: string, command: string, args: readonly string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(command, args, { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let work = '';
let lib: Packed & { path: string };
let cli: Packed & { path: string };

beforeAll(() => {
  work = tempProject('rc-install-');
  lib = pack(LIB_DIR, work);
  cli = pack(CLI_DIR, work);
}, 240_000);

afterAll(() => {
  if (work !== '') rmSync(work, { recursive: true, force: true });
});

describe('the library, ratecontract, as a user installs it', () => {
  let dir = '';
  beforeAll(() => {
    dir = tempProject('rc-lib-user-');
    npmInstall(dir, ['--omit=dev', '--omit=peer', lib.path]);
  }, 300_000);
  afterAll(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it(`declares at most ${String(MAX_RUNTIME_DEPENDENCIES)} runtime dependencies, none of a server's`, () => {
    const pkg = JSON.parse(readFileSync(join(LIB_DIR, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    const deps = Object.keys(pkg.dependencies ?? {});
    expect(deps.length).toBeLessThanOrEqual(MAX_RUNTIME_DEPENDENCIES);
    for (const server of ['@grpc/grpc-js', '@grpc/proto-loader', 'jose', 'pino', 'undici', 'yaml', 'prom-client', 'ioredis']) expect(deps).not.toContain(server);
  });

  it(`packs to at most ${String(MAX_TARBALL_BYTES / 1000)} kB`, () => {
    expect(lib.size, `${lib.filename}: ${String(lib.size)} bytes, ${String(lib.entryCount)} files`).toBeLessThanOrEqual(MAX_TARBALL_BYTES);
  });

  it(`installs at most ${String(MAX_PACKAGES)} packages and ${String(MAX_INSTALL_BYTES / 1024 / 1024)} MB`, () => {
    const packages = installedPackages(join(dir, 'node_modules'));
    expect(packages).toContain('ratecontract');
    expect(packages.length, packages.join(', ')).toBeLessThanOrEqual(MAX_PACKAGES);
    const bytes = bytesUnder(join(dir, 'node_modules'));
    expect(bytes, `${String(bytes)} bytes`).toBeLessThanOrEqual(MAX_INSTALL_BYTES);
  });

  it('a plain script imports it and decides', () => {
    writeFileSync(
      join(dir, 'decide.mjs'),
      [
        "import { createLimiter, memoryStore } from 'ratecontract';",
        "import { rateLimit } from 'ratecontract/express';",
        "import { createFetch } from 'ratecontract/client';",
        'const limiter = createLimiter({ defaultStore: memoryStore(), limits: [{ name: \'per-ip\', purpose: \'abuse\', algorithm: \'gcra\', limit: 2, window: \'1m\', key: \'ip\' }] });',
        "const seen = [];",
        "for (let i = 0; i < 3; i++) { const d = await limiter.check({ ip: '203.0.113.7' }); seen.push(d.allowed ? 200 : d.status); }",
        "console.log(JSON.stringify({ seen, middleware: typeof rateLimit(limiter), client: typeof createFetch() }));",
      ].join('\n'),
    );
    const r = run(dir, process.execPath, ['decide.mjs']);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ seen: [200, 200, 429], middleware: 'function', client: 'function' });
  });

  it('loads a contract file written as JSON without the optional yaml peer, and says what to install for YAML', () => {
    writeFileSync(join(dir, 'contract.json'), readFileSync(join(ROOT, 'test', 'unit', 'config', 'fixtures', 'good', 'contract.json'), 'utf8'));
    writeFileSync(join(dir, 'contract.yaml'), 'limits: []\n');
    writeFileSync(
      join(dir, 'load.mjs'),
      [
        "import { loadConfig } from 'ratecontract/config';",
        "const json = await loadConfig('contract.json');",
        "let yaml = '';",
        "try { await loadConfig('contract.yaml'); } catch (e) { yaml = e.message; }",
        'console.log(JSON.stringify({ limits: json.limits.length, yaml }));',
      ].join('\n'),
    );
    const r = run(dir, process.execPath, ['load.mjs']);
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { limits: number; yaml: string };
    expect(out.limits).toBeGreaterThan(0);
    expect(out.yaml).toMatch(/npm install yaml/);
  });
});

describe('the servers and tools, @ratecontract/cli, beside it', () => {
  let dir = '';
  beforeAll(() => {
    dir = tempProject('rc-cli-user-');
    npmInstall(dir, [lib.path, cli.path]);
  }, 300_000);
  afterAll(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('npx ratecontract --version prints the package version', () => {
    const version = (JSON.parse(readFileSync(join(CLI_DIR, 'package.json'), 'utf8')) as { version: string }).version;
    expect(run(dir, 'npx', ['--no-install', 'ratecontract', '--version'])).toMatchObject({ code: 0, stdout: `${version}\n` });
  });

  it('npx ratecontract check FILE checks a YAML contract', () => {
    writeFileSync(join(dir, 'ratecontract.yaml'), readFileSync(join(ROOT, 'examples', 'ratecontract.yaml'), 'utf8'));
    const r = run(dir, 'npx', ['--no-install', 'ratecontract', 'check', 'ratecontract.yaml']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('npx ratecontract serve answers on the port it prints, and stops with its process group', async () => {
    // npx runs the command as its own child: the test owns the whole process group (detached), so the server stops too.
    const child = spawn('npx', ['--no-install', 'ratecontract', 'serve', '--port', '0', '--admin-port', '0'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let url = '';
    try {
      url = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`no listening line within 30 s:\n${out}`)), 30_000);
        const read = (c: Buffer): void => {
          out += c.toString();
          const m = /listening (http:\/\/\S+)/.exec(out);
          if (m?.[1] !== undefined) {
            clearTimeout(timer);
            resolve(m[1]);
          }
        };
        child.stdout.on('data', read);
        child.stderr.on('data', read);
      });
      const res = await fetch(`${url}/health`);
      expect(res.status).toBe(200);
    } finally {
      const group = -(child.pid as number);
      const signal = (sig: NodeJS.Signals): void => {
        try {
          process.kill(group, sig);
        } catch {
          // the group is gone
        }
      };
      signal('SIGTERM');
      const kill = setTimeout(() => signal('SIGKILL'), 10_000);
      await exited;
      clearTimeout(kill);
    }
    // The server itself is gone, not only npx: its port refuses (a served test left `ratecontract serve` running before).
    const deadline = Date.now() + 10_000;
    let stillUp = true;
    while (stillUp && Date.now() < deadline) {
      stillUp = await fetch(`${url}/health`).then(
        () => true,
        () => false,
      );
      if (stillUp) await new Promise((r) => setTimeout(r, 100));
    }
    expect(stillUp, `ratecontract serve still answers on ${url} after its process group was stopped`).toBe(false);
  }, 90_000);
});
