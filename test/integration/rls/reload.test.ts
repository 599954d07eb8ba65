/**
 * `ratecontract rls` reloads its config directory on change: a good file is
 * taken (unchanged rules keep their counters), a bad one is refused, logged
 * and counted, and the running config stays. SIGTERM reports NOT_SERVING on
 * the health watch, drains and exits 0.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configDir, d, startRls, type Rls } from './helpers.js';

const A = `
domain: app
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 5 }
`;

let dir: string;
let rls: Rls;
beforeAll(async () => {
  dir = configDir({ 'app.yaml': A });
  rls = await startRls(['--config', dir]);
});
afterAll(async () => {
  await rls?.stop();
});

const remaining = async (domain: string, key: string): Promise<number | undefined> =>
  (await rls.client.should({ domain, descriptors: [d(key)] })).statuses[0]?.limit_remaining;

describe('reload', () => {
  it('takes a good change on disk; an unchanged rule keeps its counter', async () => {
    expect(await remaining('app', 'user=u1')).toBe(4);
    expect(await remaining('app', 'user=u1')).toBe(3);
    writeFileSync(join(dir, 'more.yaml'), 'domain: more\ndescriptors:\n  - key: k\n    rate_limit: { unit: day, requests_per_unit: 7 }\n');
    await rls.waitForLog((l) => l.event === 'reload' && l.domains === 2);
    expect(await remaining('more', 'k=x')).toBe(6);
    expect(await remaining('app', 'user=u1')).toBe(2);
  });

  it('refuses a bad file: logged with the file and path, counted, the running config kept', async () => {
    writeFileSync(join(dir, 'bad.yaml'), 'domain: bad\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n');
    const line = await rls.waitForLog((l) => l.event === 'reload' && l.ok === false);
    expect(line).toMatchObject({ level: 40, reason: 'watch', kept: 'the previous config' });
    expect(String(line.error)).toMatch(/bad\.yaml: descriptors\[0\]\.rate_limit\.unit: invalid rate limit unit "fortnight"/);
    expect(await remaining('more', 'k=x')).toBe(5);
    expect(await remaining('app', 'user=u1')).toBe(1);
    const metrics = await (await fetch(`${rls.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/ratecontract_config_load_errors_total [1-9]/);
    expect(metrics).toMatch(/ratecontract_config_reloads_total\{result="ok"\} [1-9]/);
  });

  it('SIGTERM: the health watch turns NOT_SERVING, the service drains and exits 0', async () => {
    const seen: string[] = [];
    const stream = rls.client.watchHealth('');
    const first = new Promise<void>((resolve) =>
      stream.on('data', (m: { status: string }) => {
        seen.push(m.status);
        resolve();
      }),
    );
    stream.on('error', () => undefined);
    await first;
    rls.signal('SIGTERM');
    expect(await rls.exited).toBe(0);
    expect(seen[0]).toBe('SERVING');
    expect(seen).toContain('NOT_SERVING');
    expect(rls.logs.some((l) => l.event === 'stopped')).toBe(true);
  });
});
