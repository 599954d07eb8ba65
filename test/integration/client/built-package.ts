import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIB_DIR, ROOT } from '../../helpers/paths.js';

function newest(dir: string): number {
  let t = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    t = Math.max(t, entry.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/**
 * Builds dist/ when it is missing or older than any file in src/, so a
 * spawned script never runs yesterday's build. tsc rewrites every output,
 * so one output's time is the build's.
 */
export function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(join(LIB_DIR, 'dist/client/fetch.js')).mtimeMs;
  } catch {
    // Not built yet.
  }
  if (built >= newest(join(LIB_DIR, 'src'))) return;
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-b', 'packages/ratecontract'], { cwd: ROOT, stdio: 'inherit', timeout: 180_000 });
}

/**
 * An empty project whose `node_modules/ratecontract` is this repository, so
 * a script there imports `ratecontract/client` through the package's
 * exports map, from dist/, as an installed user would.
 */
export interface UserProject {
  readonly dir: string;
  /** Writes `name` (a plain .mjs script) into the project and returns its path. */
  write(name: string, source: string): string;
  remove(): void;
}

export function userProject(): UserProject {
  const dir = mkdtempSync(join(tmpdir(), 'rc-client-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(LIB_DIR, join(dir, 'node_modules', 'ratecontract'), 'dir');
  writeFileSync(join(dir, 'package.json'), '{ "name": "user-script", "private": true, "type": "module" }\n');
  return {
    dir,
    write(name, source) {
      const path = join(dir, name);
      writeFileSync(path, source);
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** How a spawned script ended. */
export interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** When it exited (performance.now() of this process). */
  readonly at: number;
}

/** A running script: its output so far, a way to wait for a line, to signal it, and its end. */
export interface Running {
  readonly stdout: () => string;
  /** Resolves once stdout matches `pattern`. */
  readonly until: (pattern: RegExp) => Promise<void>;
  readonly kill: (signal: NodeJS.Signals) => void;
  readonly ended: Promise<Ended>;
}

/** Runs `node script ...args` in `cwd`; it is killed (SIGKILL) if it has not exited after `timeoutMs`. */
export function run(script: string, args: readonly string[], cwd: string, timeoutMs = 20_000): Running {
  const child = spawn(process.execPath, [script, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
  let stdout = '';
  let stderr = '';
  const watchers: Array<() => void> = [];
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    for (const w of watchers.splice(0)) w();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const ended = new Promise<Ended>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      for (const w of watchers.splice(0)) w();
      resolve({ code, signal, stdout, stderr, at: performance.now() });
    });
  });
  const until = (pattern: RegExp): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (pattern.test(stdout)) resolve();
        else if (child.exitCode !== null || child.signalCode !== null) reject(new Error(`exited before ${String(pattern)}:\n${stdout}\n${stderr}`));
        else watchers.push(check);
      };
      check();
    });
  return { stdout: () => stdout, until, kill: (signal) => child.kill(signal), ended };
}
