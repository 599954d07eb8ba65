import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuard } from '../../../packages/ratecontract/src/adapters/node/index.js';
import { createLimiter, ManualClock, memoryStore } from '../../../packages/ratecontract/src/index.js';
import { ensureBuilt, run, userProject, type UserProject } from './built-package.js';
import { scriptedServer, type ScriptedServer } from '../../unit/client/helpers.js';

// The polite client as a plain script uses it: `node script.mjs`, importing
// `ratecontract/client` from the built package. A retry's wait is work the
// script awaits, so it keeps the process alive until the answer comes.

let project: UserProject;
const closers: Array<() => Promise<void>> = [];

beforeAll(() => {
  ensureBuilt();
  project = userProject();
}, 200_000);

afterAll(async () => {
  for (const close of closers.splice(0)) await close();
  project.remove();
});

/**
 * A node:http server behind the real node adapter: one request per second
 * per IP (GCRA; every request here comes from 127.0.0.1), on a manual clock. The test spends the limit; the
 * script's first request then gets 429 with `Retry-After: 1`, and the
 * clock moves a window on, so the retry after that real 1 s wait is admitted.
 */
async function spentLimit(): Promise<{ url: string; statuses: number[] }> {
  const clock = new ManualClock(Date.UTC(2026, 11, 1, 9));
  const limiter = createLimiter({
    clock,
    defaultStore: memoryStore(),
    limits: [{ name: 'per-ip', purpose: 'abuse', limit: 1, window: '1s', key: 'ip' }],
  });
  const guard = createGuard(limiter);
  const statuses: number[] = [];
  const server: Server = createServer((req, res) => {
    res.on('finish', () => statuses.push(res.statusCode));
    void guard(req, res).then((ok) => {
      if (ok) res.end('ok');
      else clock.advance(1000);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/things`;
  const first = await fetch(url);
  await first.text();
  expect(first.status).toBe(200);
  return { url, statuses };
}

async function alwaysLimited(seconds: number): Promise<ScriptedServer> {
  const s = await scriptedServer(() => ({ status: 429, headers: { 'retry-after': String(seconds) } }));
  closers.push(() => s.close());
  return s;
}

/** The first fenced js block after `heading` in docs/client.md, run as printed with the address taken from argv. */
function example(heading: string): string {
  const doc = readFileSync(new URL('../../../docs/client.md', import.meta.url), 'utf8');
  const at = doc.indexOf(`\n${heading}\n`);
  const block = /```js\n([\s\S]*?)```/.exec(doc.slice(at))?.[1];
  if (at < 0 || block === undefined) throw new Error(`docs/client.md: no js example under ${heading}`);
  const source = block.replace("'https://api.example.com/v1/things'", 'process.argv[2]');
  expect(source).toContain('process.argv[2]');
  return source;
}

// docs/client.md, "Process lifetime": only `const res = await createFetch()(url); console.log(res.status)`.
const TOP_LEVEL_AWAIT = example('## Process lifetime');

const MAIN_CATCH = `import { createFetch } from 'ratecontract/client';
async function main() {
  const res = await createFetch()(process.argv[2]);
  console.log(res.status);
}
main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
`;

describe('a plain script waits out the retry before it exits', () => {
  it.each([
    ['top-level await', TOP_LEVEL_AWAIT],
    ['main().catch()', MAIN_CATCH],
  ])('%s: prints the status after the wait and exits 0', async (form, source) => {
    const { url, statuses } = await spentLimit();
    const script = project.write(`${form === 'top-level await' ? 'tla' : 'main'}.mjs`, source);
    const end = await run(script, [url], project.dir).ended;
    expect({ code: end.code, signal: end.signal, stdout: end.stdout, stderr: end.stderr }).toEqual({ code: 0, signal: null, stdout: '200\n', stderr: '' });
    // The test's request, the script's 429, the script's retry.
    expect(statuses).toEqual([200, 429, 200]);
  });

  it('unref: true lets the process exit in the middle of the wait, as documented (exit 13 with top-level await, 0 without)', async () => {
    const tla = project.write('tla-unref.mjs', TOP_LEVEL_AWAIT.replace('createFetch()', 'createFetch({ unref: true })'));
    const main = project.write('main-unref.mjs', MAIN_CATCH.replace('createFetch()', 'createFetch({ unref: true })'));
    const one = await spentLimit();
    const a = await run(tla, [one.url], project.dir).ended;
    // Node 22 and later also warn "Detected unsettled top-level await" on stderr; Node 20 exits silently.
    expect({ code: a.code, stdout: a.stdout }).toEqual({ code: 13, stdout: '' });
    const two = await spentLimit();
    const b = await run(main, [two.url], project.dir).ended;
    expect({ code: b.code, stdout: b.stdout, stderr: b.stderr }).toEqual({ code: 0, stdout: '', stderr: '' });
    // Each script got its 429 and never sent the retry.
    expect([one.statuses, two.statuses]).toEqual([
      [200, 429],
      [200, 429],
    ]);
  });
});

describe('SIGINT during a wait', () => {
  // The recipe of docs/client.md, as printed.
  const RECIPE = example('### Ending a wait with Ctrl-C');

  it('with an AbortController wired to SIGINT, the 30 s wait ends within 2 s of the signal, with AbortError, exit 130', async () => {
    const s = await alwaysLimited(30);
    const script = project.write('sigint.mjs', RECIPE);
    const child = run(script, [s.url], project.dir);
    await child.until(/waiting \d+ ms/);
    const sent = performance.now();
    child.kill('SIGINT');
    const end = await child.ended;
    // Bound: 2 s, generous for a shared 2-core machine; the wait it cuts short is 30 s.
    expect(end.at - sent).toBeLessThan(2000);
    expect({ code: end.code, signal: end.signal }).toEqual({ code: 130, signal: null });
    expect(end.stdout).toMatch(/^waiting \d+ ms\n$/);
    expect(end.stderr).toBe('AbortError: This operation was aborted\n');
    expect(s.hits).toHaveLength(1);
  });

  it('without a SIGINT handler, Node ends the process on the signal, as for any script (documented)', async () => {
    const s = await alwaysLimited(30);
    const script = project.write(
      'sigint-default.mjs',
      `import { createFetch } from 'ratecontract/client';
const r = await createFetch({ onWait: () => console.log('waiting') })(process.argv[2]);
console.log(r.status);
`,
    );
    const child = run(script, [s.url], project.dir);
    await child.until(/waiting/);
    child.kill('SIGINT');
    const end = await child.ended;
    expect({ code: end.code, signal: end.signal, stdout: end.stdout }).toEqual({ code: null, signal: 'SIGINT', stdout: 'waiting\n' });
  });
});
