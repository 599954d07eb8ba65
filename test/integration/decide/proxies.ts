/**
 * Real proxies for the decide tests: Debian's nginx, Caddy and HAProxy,
 * each started on a free port with a config in the test's own temp
 * directory, under `timeout` (TERM after its lifetime, KILL 5 s later) so a
 * leaked one dies by itself, and stopped by the test. A missing binary skips the file saying why, except on CI
 * (`CI=true`), where scripts/ensure-proxies.sh installs them and a missing
 * one fails (as the Chromium tests do).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { spawnServer, runCli, type Served } from '../serve/helpers.js';

/** Hard lifetime of every proxy, seconds. */
const LIFETIME_S = 180;

export const NGINX = '/usr/sbin/nginx';
export const CADDY = '/usr/bin/caddy';
export const HAPROXY = '/usr/sbin/haproxy';

/** Whether the tests of `binary` run: present, or on CI (where a missing one must fail, not skip). */
export function runsWith(binary: string, name: string): boolean {
  if (existsSync(binary)) return true;
  if (process.env.CI === 'true') return true;
  console.warn(`${name} decide tests skipped: ${binary} is missing (bash scripts/ensure-proxies.sh installs it)`);
  return false;
}

/** A free TCP port on 127.0.0.1 (taken and released). */
export async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** The application behind the proxy: answers 200 naming the request, and records every request it saw. */
export interface Upstream {
  readonly url: string;
  readonly port: number;
  readonly seen: { method: string; url: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

export async function startUpstream(): Promise<Upstream> {
  const seen: Upstream['seen'] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume();
    req.once('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`upstream ${req.method ?? ''} ${req.url ?? ''}`);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `ratecontract decide` on a fixed port (the emitted config names it), admin port free. */
export function startDecide(config: string, port: number, extra: readonly string[] = []): Promise<Served> {
  return spawnServer('decide', ['--config', config, '--port', String(port), '--admin-port', '0', ...extra]);
}

/** `ratecontract decide --emit target ...`: the config text, or throws with stderr. */
export async function emit(target: string, config: string, decidePort: number, upstreamPort: number, listenPort: number): Promise<string> {
  const r = await runCli(['decide', '--config', config, '--emit', target, '--port', String(decidePort), '--upstream', `http://127.0.0.1:${upstreamPort}`, '--listen', `127.0.0.1:${listenPort}`]);
  if (r.code !== 0) throw new Error(`--emit ${target} exited ${String(r.code)}: ${r.stderr}`);
  return r.stdout;
}

/** A running proxy process. */
export interface Proxy {
  readonly url: string;
  readonly proc: ChildProcess;
  /** What the proxy wrote to stderr (and its error log, for nginx). */
  output(): string;
  stop(): Promise<void>;
}

async function waitForPort(port: number, proc: ChildProcess, output: () => string, budgetMs = 15_000): Promise<void> {
  const until = Date.now() + budgetMs;
  while (Date.now() < until) {
    if (proc.exitCode !== null) throw new Error(`the proxy exited (${String(proc.exitCode)}): ${output()}`);
    try {
      await fetch(`http://127.0.0.1:${port}/__ready`, { signal: AbortSignal.timeout(500) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`the proxy did not listen on ${port} within ${budgetMs} ms: ${output()}`);
}

function spawnProxy(command: string, args: readonly string[], env?: NodeJS.ProcessEnv, cwd?: string): { proc: ChildProcess; output: () => string } {
  // TERM first (nginx's master then stops its workers; a KILL would orphan them), KILL 5 s later if it is still there.
  const proc = spawn('timeout', ['--signal=TERM', '--kill-after=5', String(LIFETIME_S), command, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env }, cwd });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  // `timeout` passes SIGTERM on to the proxy (SIGKILL would end `timeout` alone and orphan the proxy).
  process.once('exit', () => proc.kill('SIGTERM'));
  return { proc, output: () => out };
}

async function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = once(proc, 'exit');
  // `timeout` passes SIGTERM on to the proxy it runs.
  proc.kill('SIGTERM');
  const t = setTimeout(() => proc.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(t);
}

/**
 * nginx in the foreground (`daemon off`), one worker, with `fragment` (an
 * `http {}` include, as `--emit nginx` writes) under `dir`: its pid file,
 * error log and temp paths there too.
 */
export async function startNginx(dir: string, fragment: string, listenPort: number): Promise<Proxy> {
  mkdirSync(join(dir, 'tmp'), { recursive: true });
  writeFileSync(join(dir, 'ratecontract.conf'), fragment);
  const conf = [
    'daemon off;',
    'worker_processes 1;',
    ...(process.getuid?.() === 0 ? ['user root;'] : []),
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'error.log')} warn;`,
    'events { worker_connections 256; }',
    'http {',
    '    access_log off;',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `    ${t}_temp_path ${join(dir, 'tmp', t)};`),
    `    include ${join(dir, 'ratecontract.conf')};`,
    '}',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const check = spawnSync(NGINX, ['-t', '-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`nginx -t refused the config: ${check.stderr}`);
  const { proc, output } = spawnProxy(NGINX, ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')]);
  await waitForPort(listenPort, proc, output);
  return { url: `http://127.0.0.1:${listenPort}`, proc, output, stop: () => stopProcess(proc) };
}

/** Caddy (`caddy run`) with `caddyfile` under `dir`; its data and config folders there too. */
export async function startCaddy(dir: string, caddyfile: string, listenPort: number): Promise<Proxy> {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'Caddyfile');
  writeFileSync(file, caddyfile);
  const env = { HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_CONFIG_HOME: join(dir, 'config') };
  const check = spawnSync(CADDY, ['validate', '--config', file, '--adapter', 'caddyfile'], { encoding: 'utf8', env: { ...process.env, ...env } });
  if (check.status !== 0) throw new Error(`caddy validate refused the Caddyfile: ${check.stderr}`);
  const { proc, output } = spawnProxy(CADDY, ['run', '--config', file, '--adapter', 'caddyfile'], env);
  await waitForPort(listenPort, proc, output);
  return { url: `http://127.0.0.1:${listenPort}`, proc, output, stop: () => stopProcess(proc) };
}

/** HAProxy in the foreground (`-db`) with `cfg` and its Lua action under `dir` (the config loads `ratecontract.lua` from there). */
export async function startHaproxy(dir: string, cfg: string, lua: string, listenPort: number): Promise<Proxy> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'haproxy.cfg'), cfg);
  writeFileSync(join(dir, 'ratecontract.lua'), lua);
  const check = spawnSync(HAPROXY, ['-c', '-f', join(dir, 'haproxy.cfg')], { encoding: 'utf8', cwd: dir });
  if (check.status !== 0) throw new Error(`haproxy -c refused the config: ${check.stdout}${check.stderr}`);
  const { proc, output } = spawnProxy(HAPROXY, ['-db', '-f', join(dir, 'haproxy.cfg')], undefined, dir);
  await waitForPort(listenPort, proc, output);
  return { url: `http://127.0.0.1:${listenPort}`, proc, output, stop: () => stopProcess(proc) };
}

/** The contract of the proxy tests: an abuse route (fails closed), a shedding route (passes), an unlimited one. */
export const CONTRACT = `stores:
  abuse: { type: memory }
  shared: { type: memory }
limits:
  - name: login-ip
    purpose: abuse
    limit: 2
    window: 1m
    key: ip
    store: abuse
    reason: password spraying from one address
  - name: search-ip
    purpose: shedding
    limit: 1000
    window: 1s
    key: ip
    store: shared
    reason: search is CPU-bound; each address gets a share
routes:
  - match: POST /login
    limits: [login-ip]
  - match: GET /search
    limits: [search-ip]
  - match: GET /health
    limits: []
http:
  trustProxy: loopback
  advertise: always
`;

/** What a proxy test runs: the proxy, decide behind it, the upstream behind the proxy. */
export interface Rig {
  readonly proxy: Proxy;
  readonly decide: Served;
  readonly upstream: Upstream;
}

/**
 * The cases every proxy shares, registered in the caller's `describe`, in
 * this order (the last kills decide): keep-alive to decide (with `denials`
 * rejected requests among the subrequests, for a proxy whose denials must
 * not cost a connection), then decide killed under traffic (the abuse route
 * 503, the shedding route passes, nothing 500), then, with `unlimitedRoute`,
 * no empty RateLimit field on a route decide is not asked about.
 */
export function sharedCases(rig: () => Rig, options: { readonly denials?: number; readonly unlimitedRoute?: boolean } = {}): void {
  const denials = options.denials ?? 0;
  it('keeps its connections to decide alive', async () => {
    const { proxy: n, decide } = rig();
    const count = async (): Promise<{ connections: number; subrequests: number }> =>
      (await (await fetch(`${decide.adminUrl as string}/decide.json`)).json()) as { connections: number; subrequests: number };
    const before = await count();
    for (let i = 0; i < 30; i++) expect((await fetch(`${n.url}/search?q=${i}`)).status).toBe(200);
    // Denials too (login-ip is spent for 127.0.0.1 by the caller's earlier case).
    for (let i = 0; i < denials; i++) expect((await fetch(`${n.url}/login`, { method: 'POST' })).status).toBe(429);
    const after = await count();
    expect(after.subrequests - before.subrequests).toBe(30 + denials);
    // The subrequests, one after another, on at most one new connection.
    expect(after.connections - before.connections).toBeLessThanOrEqual(1);
  });

  it('with decide killed under traffic: the abuse route answers 503 (fails closed), the shedding route passes, nothing answers 500', async () => {
    const { proxy: n, decide, upstream: up } = rig();
    const statuses = new Set<number>();
    let running = true;
    const traffic = (async () => {
      while (running) {
        const r = await fetch(`${n.url}/search?q=load`);
        statuses.add(r.status);
        await r.arrayBuffer();
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    decide.signal('SIGKILL');
    await decide.exited;
    await new Promise((r) => setTimeout(r, 200));
    running = false;
    await traffic;
    expect([...statuses]).toEqual([200]);

    const seenLogin = up.seen.filter((s) => s.url === '/login').length;
    const login = await fetch(`${n.url}/login`, { method: 'POST', headers: { 'x-forwarded-for': '198.51.100.7' } });
    expect(login.status).toBe(503);
    expect(login.headers.get('retry-after')).toBe('1');
    expect(await login.json()).toMatchObject({ status: 503 });
    expect(up.seen.filter((s) => s.url === '/login').length).toBe(seenLogin);

    const search = await fetch(`${n.url}/search?q=down`);
    expect(search.status).toBe(200);
    expect(search.headers.get('retry-after')).toBeNull();
    expect(await search.text()).toBe('upstream GET /search?q=down');
    expect((await fetch(`${n.url}/health`)).status).toBe(200);
  });

  if (options.unlimitedRoute === true) {
    it('adds no empty RateLimit field when decide told nothing (an unlimited route)', async () => {
      const r = await fetch(`${rig().proxy.url}/health`);
      expect(r.status).toBe(200);
      expect(r.headers.has('ratelimit')).toBe(false);
      expect(r.headers.has('ratelimit-policy')).toBe(false);
    });
  }
}
