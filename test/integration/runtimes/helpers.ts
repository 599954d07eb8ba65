/**
 * Runs the library on Bun, Deno and workerd, each installed from npm as a
 * devDependency (docs/runtimes.md). The app (fixtures/app.ts) is bundled by
 * esbuild from the library's sources with every `node:` import left to the
 * runtime, started on a free loopback port, and driven over real HTTP from
 * here. A runtime whose binary is missing fails the file: CI installs them
 * (`npm ci`), so a missing one is a broken install, never a reason to skip.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { ROOT } from '../../helpers/paths.js';
import { connectStandalone, type TestClient } from '../redis/helpers/clients.js';
import { startRedis, type RedisServer } from '../redis/helpers/redis-server.js';
import { startRestServer, type RestServer } from '../redis/helpers/rest-server.js';

/** The `node:` modules the bundle may leave to the runtime: what every runtime here provides. */
export const RUNTIME_NODE_MODULES = ['node:crypto', 'node:diagnostics_channel', 'node:net'];

/** The runtime's binary from node_modules/.bin; throws, naming the package, when it is missing. */
export function runtimeBin(name: 'bun' | 'deno' | 'workerd'): string {
  const bin = join(ROOT, 'node_modules', '.bin', name);
  if (!existsSync(bin)) throw new Error(`${name} is not installed (${bin} is missing): it is a devDependency of the workspace; run npm ci`);
  return bin;
}

/** Bundles `fixtures/<entry>` into `dir`; fails when the bundle imports a `node:` module outside RUNTIME_NODE_MODULES. */
export async function bundle(entry: string, dir: string): Promise<string> {
  const outfile = join(dir, 'bundle.js');
  const result = await build({
    entryPoints: [join(import.meta.dirname, 'fixtures', entry)],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['@ratecontract/source', 'import'],
    external: ['node:*'],
    outfile,
    metafile: true,
    logLevel: 'silent',
  });
  const imported = new Set<string>();
  for (const output of Object.values(result.metafile.outputs)) for (const i of output.imports) if (i.external) imported.add(i.path);
  expect([...imported].filter((m) => !RUNTIME_NODE_MODULES.includes(m))).toEqual([]);
  return outfile;
}

/**
 * Runs fixtures/dist-entries.js with `bin args` from the repository root:
 * the built entries imported by package name, no bundler (needs a built
 * dist/, as `npm test` and `npm run test:full` make first).
 */
export function defineDistEntriesTest(runtime: string, bin: () => string, args: readonly string[]): void {
  it(`${runtime}: the built entries import by package name (no bundler) and pass the conformance suite`, async () => {
    const out = await new Promise<string>((resolve, reject) => {
      execFile(bin(), [...args, join(import.meta.dirname, 'fixtures', 'dist-entries.js')], { cwd: ROOT, timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } }, (error, stdout, stderr) =>
        error === null ? resolve(stdout) : reject(new Error(`${runtime}: ${error.message}\n${stderr}`)),
      );
    });
    const r = JSON.parse(out.trim().split('\n').pop() ?? '{}') as { failed: string[]; passed: number; entries: string[] };
    expect(r.failed).toEqual([]);
    expect(r.passed).toBeGreaterThan(5);
    expect(r.entries).toEqual(['function', 'function', 'function', 'function']);
  }, 60_000);
}

/** A free loopback port (bound and released: workerd takes a fixed address). */
export async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

export interface Running {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Spawns `bin args` and waits (up to 20 s) for a line on stdout or stderr
 * from which `portOf` reads the port; rejects with the output if it exits
 * or times out first.
 */
export function spawnServer(bin: string, args: readonly string[], cwd: string, portOf: (line: string) => number | undefined): Promise<Running> {
  const child: ChildProcess = spawn(bin, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  let output = '';
  return new Promise<Running>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${bin} did not start within 20 s:\n${output}`)), 20_000);
    const fail = (e: Error): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(e);
    };
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      for (const line of output.split('\n')) {
        const port = portOf(line);
        if (port === undefined) continue;
        clearTimeout(timer);
        resolve({
          url: `http://127.0.0.1:${port}`,
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null || child.signalCode !== null) return done();
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
        return;
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', fail);
    child.once('exit', (code, signal) => fail(new Error(`${bin} exited (${code ?? signal}) before listening:\n${output}`)));
  });
}

/** Reads `{"port":N}` from a line. */
export function jsonPort(line: string): number | undefined {
  const m = /^\{"port":(\d+)\}$/.exec(line.trim());
  return m === null ? undefined : Number(m[1]);
}

/** A temporary directory, removed by the returned function. */
export function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'rc-runtime-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A workerd compatibility date and its flags. */
export interface WorkerdCompat {
  readonly date: string;
  readonly flags: readonly string[];
}

/** workerd's config: the bundle as a module worker on `port`, loopback reachable from fetch(). */
export function writeWorkerdConfig(dir: string, port: number, compat: WorkerdCompat): string {
  const path = join(dir, 'config.capnp');
  writeFileSync(
    path,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "net", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ (name = "bundle.js", esModule = embed "bundle.js") ],
  compatibilityDate = "${compat.date}",
  compatibilityFlags = [${compat.flags.map((f) => JSON.stringify(f)).join(', ')}],
  globalOutbound = "net",
);
`,
  );
  return path;
}

/** A Node server the runtimes' clients ask: `/flaky/<id>` answers 429 with `Retry-After: 1` the first time, then 200 `fine`. */
async function startFlaky(): Promise<{ server: Server; url: string }> {
  const seen = new Set<string>();
  const server = createServer((req, res) => {
    const first = !seen.has(req.url ?? '');
    seen.add(req.url ?? '');
    if (first) {
      res.writeHead(429, { 'retry-after': '1', 'content-type': 'text/plain' });
      res.end('slow down');
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('fine');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** The checks every runtime passes, against the app `start` serves. */
export function defineRuntimeSuite(runtime: string, start: (dir: string) => Promise<Running>, label = runtime): void {
  describe(`${label}: the library off Node`, () => {
    let app: Running | undefined;
    let flaky: { server: Server; url: string } | undefined;
    let redis: { server: RedisServer; io: TestClient; rest: RestServer } | undefined;
    const tmp = tempDir();
    const url = (): string => {
      if (app === undefined) throw new Error(`${runtime} did not start`);
      return app.url;
    };

    beforeAll(async () => {
      flaky = await startFlaky();
      const server = await startRedis();
      const io = await connectStandalone('ioredis', server.port);
      redis = { server, io, rest: await startRestServer(io.client as Redis) };
      app = await start(tmp.dir);
    }, 60_000);

    afterAll(async () => {
      await app?.stop();
      await new Promise<void>((resolve) => (flaky === undefined ? resolve() : flaky.server.close(() => resolve())));
      await redis?.rest.close();
      await redis?.io.close();
      await redis?.server.stop();
      tmp.remove();
    });

    it('serves the app on the runtime', async () => {
      const r = await fetch(`${url()}/runtime`);
      expect(await r.text()).toBe(runtime);
    });

    it('passes the store conformance suite on the memory store', async () => {
      const r = await fetch(`${url()}/conformance`);
      const report = (await r.json()) as { passed: string[]; failed: Array<{ case: string; error: string }> };
      expect(report.failed).toEqual([]);
      expect(report.passed.length).toBeGreaterThan(5);
    }, 30_000);

    it('admits 3, then 429 with an exact Retry-After and the RateLimit fields (Hono adapter)', async () => {
      const got: Array<{ status: number; retryAfter: string | null; rateLimit: string | null; policy: string | null }> = [];
      for (let i = 0; i < 4; i++) {
        const r = await fetch(`${url()}/limited`, { headers: { 'x-user': 'alice' } });
        await r.text();
        got.push({ status: r.status, retryAfter: r.headers.get('retry-after'), rateLimit: r.headers.get('ratelimit'), policy: r.headers.get('ratelimit-policy') });
      }
      expect(got.map((g) => g.status)).toEqual([200, 200, 200, 429]);
      expect(got[3]?.retryAfter).toBe('20');
      expect(got.map((g) => g.rateLimit?.replace(/;pk=:[^:]*:$/, ''))).toEqual(['"per-user";r=2;t=20', '"per-user";r=1;t=40', '"per-user";r=0;t=60', '"per-user";r=0;t=20']);
      for (const g of got) expect(g.policy).toMatch(/^"per-user";q=3;w=60;pk=:[A-Za-z0-9+/=]+:$/);
      // Another user has a budget of their own.
      expect((await fetch(`${url()}/limited`, { headers: { 'x-user': 'bob' } })).status).toBe(200);
    });

    it('answers 503 once a global limit is spent', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`${url()}/global`);
        await r.text();
        statuses.push(r.status);
      }
      expect(statuses).toEqual([200, 200, 503]);
    });

    it("runs the client: waits out the local server's Retry-After, then gets its answer", async () => {
      const r = await fetch(`${url()}/client?url=${encodeURIComponent(`${flaky?.url}/flaky/${label}`)}`);
      const body = (await r.json()) as { status: number; body: string; waits: number[]; elapsedMs: number };
      expect(body.status).toBe(200);
      expect(body.body).toBe('fine');
      expect(body.waits).toHaveLength(1);
      expect(body.waits[0]).toBeGreaterThanOrEqual(1000);
      expect(body.elapsedMs).toBeGreaterThanOrEqual(990);
    }, 15_000);

    it('decides on Redis over HTTP (ratecontract/redis-http): 3 admitted, then 429 with the exact wait at server time', async () => {
      const rest = redis?.rest;
      if (rest === undefined) throw new Error('no REST server');
      const r = await fetch(`${url()}/redis-http?url=${encodeURIComponent(rest.url)}&token=${encodeURIComponent(rest.token)}`);
      const text = await r.text();
      expect(r.status, text).toBe(200);
      const decisions = JSON.parse(text) as Array<{ allowed: boolean; outcome: string; retryAfterMs: number }>;
      expect(decisions.map((d) => d.outcome)).toEqual(['allowed', 'allowed', 'allowed', 'rejected']);
      expect(decisions[3]?.retryAfterMs).toBeGreaterThan(290_000);
      expect(decisions[3]?.retryAfterMs).toBeLessThanOrEqual(300_000);
    }, 15_000);

    it('has a monotonic clock that moves', async () => {
      const r = await fetch(`${url()}/clock`);
      const { a, b } = (await r.json()) as { a: number; b: number };
      expect(b).toBeGreaterThan(a);
    });
  });
}
