import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const children: ChildProcess[] = [];

/** Starts `examples/<name>/server.js` on port 0 and resolves with the URL it prints. */
function startExample(name: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [`examples/${name}/server.js`], { cwd: root, env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`${name}: no "listening on" line within 10 s\n${out}\n${err}`)), 10_000);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1].replace(/\/$/, ''));
      }
    });
    child.stderr?.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${String(code)}\n${err}`));
    });
  });
}

beforeAll(() => {
  // The examples import 'ratecontract/...', which resolves through the exports map to dist/.
  if (!existsSync(new URL('../../packages/ratecontract/dist/adapters/hono/index.js', import.meta.url))) {
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-b', 'packages/ratecontract'], { cwd: root, stdio: 'inherit', timeout: 120_000 });
  }
}, 130_000);

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
});

describe.each(['node', 'express', 'fastify', 'hono'])('examples/%s', (name) => {
  it('starts on port 0 and answers with the contract', async () => {
    const url = await startExample(name);
    const anonymous = await fetch(`${url}/`);
    expect(anonymous.status).toBe(200);
    expect(anonymous.headers.get('ratelimit-policy')).toBeNull();
    const known = await fetch(`${url}/`, { headers: { 'x-api-key': 'demo-key' } });
    expect(known.status).toBe(200);
    expect(await known.json()).toEqual({ hello: 'world', outcome: 'allowed' });
    expect(known.headers.get('ratelimit-policy')).toMatch(/^"per-account";q=100;w=60;pk=:[^:]+:, "per-ip";q=30;w=60;pk=:[^:]+:$/);
  }, 20_000);
});

describe('examples/login', () => {
  it('100 successful logins in a row never block; the 6th failed attempt within 15 minutes gets 429 with an exact Retry-After', async () => {
    const url = await startExample('login');
    const login = (password: string): Promise<Response> =>
      fetch(`${url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'alice', password }) });
    for (let i = 0; i < 100; i++) expect((await login('correct horse battery staple')).status, `login ${i}`).toBe(200);
    for (let i = 0; i < 5; i++) expect((await login('wrong')).status, `failure ${i}`).toBe(401);
    const sixth = await login('wrong');
    expect(sixth.status).toBe(429);
    // The five failures came within a second: the first leaves the 15-minute window 900 s after it was made.
    expect(sixth.headers.get('retry-after')).toBe('900');
    // The right password is refused too while the account is blocked (the limit is on the attempt, before the check).
    expect((await login('correct horse battery staple')).status).toBe(429);
  }, 30_000);
});
