/**
 * The one watcher policy (`watchConfig`) on the real file system: the
 * folder is watched, and a change is reported only when what the config
 * path reads changed. Each case waits for a report (or its absence) with a
 * bound far above the 20 ms debounce used here; no case depends on speed.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { watchConfig, type ConfigWatcher } from '../../../packages/cli/src/host/config-watcher.js';

let dir: string;
let watcher: ConfigWatcher | undefined;
let changes = 0;
let errors: Error[] = [];
let waiters: Array<() => void> = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rc-watch-'));
  changes = 0;
  errors = [];
  waiters = [];
});
afterEach(() => {
  watcher?.close();
  watcher = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function watchIt(path: string): void {
  watcher = watchConfig(path, {
    debounceMs: 20,
    onChange: () => {
      changes++;
      for (const w of waiters.splice(0)) w();
    },
    onError: (e) => errors.push(e),
  });
}

/** Resolves at the next report; rejects after 5 s. */
function nextChange(): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no change reported within 5 s')), 5_000);
    waiters.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Long enough for a report that would come (the debounce is 20 ms). */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 300));

describe('watchConfig', () => {
  it('a file: in-place writes and renames over it report; other files and same bytes do not', async () => {
    const file = join(dir, 'c.yaml');
    writeFileSync(file, 'a: 1\n');
    watchIt(file);
    writeFileSync(join(dir, 'other.txt'), 'x');
    writeFileSync(file, 'a: 1\n');
    await settle();
    expect(changes).toBe(0);

    let next = nextChange();
    writeFileSync(file, 'a: 2\n');
    await next;
    next = nextChange();
    writeFileSync(join(dir, '.c.yaml.tmp'), 'a: 3\n');
    renameSync(join(dir, '.c.yaml.tmp'), file);
    await next;
    // Written twice in quick steps (truncate, write): one report.
    next = nextChange();
    writeFileSync(file, '');
    writeFileSync(file, 'a: 4\n');
    await next;
    await settle();
    expect(changes).toBe(3);
    expect(errors).toEqual([]);
  });

  it('a file deleted and written again reports (the reload then reads the new one)', async () => {
    const file = join(dir, 'c.yaml');
    writeFileSync(file, 'a: 1\n');
    watchIt(file);
    const next = nextChange();
    unlinkSync(file);
    await next;
    const back = nextChange();
    writeFileSync(file, 'a: 2\n');
    await back;
  });

  it('a directory (rls): a new file reports, a hidden one does not, a ConfigMap ..data swap does', async () => {
    mkdirSync(join(dir, '..v1'));
    writeFileSync(join(dir, '..v1', 'app.yaml'), 'domain: app\n');
    symlinkSync('..v1', join(dir, '..data'));
    symlinkSync(join('..data', 'app.yaml'), join(dir, 'app.yaml'));
    watchIt(dir);
    writeFileSync(join(dir, '.hidden'), 'x');
    await settle();
    expect(changes).toBe(0);

    let next = nextChange();
    writeFileSync(join(dir, 'more.yaml'), 'domain: more\n');
    await next;

    next = nextChange();
    mkdirSync(join(dir, '..v2'));
    writeFileSync(join(dir, '..v2', 'app.yaml'), 'domain: app2\n');
    symlinkSync('..v2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    await next;
    expect(changes).toBe(2);
  });

  it('a folder that cannot be watched is an error, not a throw', () => {
    watchIt(join(dir, 'missing', 'c.yaml'));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/ENOENT/);
  });
});
