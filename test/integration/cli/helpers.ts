import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { CLI_MAIN } from '../../helpers/paths.js';

/** The built CLI, as `npx ratecontract` runs it (`npm run build` makes it; `npm test` and `npm run test:full` build first). */
export const BIN = CLI_MAIN;

/** What one run of the `ratecontract` process did. */
export interface ProcessRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Spawns `node dist/cli/main.js ...args` as a user runs it, with `input` piped
 * to its stdin; never rejects on a non-zero exit. Most of the command line is
 * tested in-process (test/unit/cli/helpers.ts); this is for what only the
 * process shows: its exit status, pipes, the built files.
 */
export function runProcess(args: readonly string[], options: { readonly input?: string | Buffer; readonly cwd?: string } = {}): Promise<ProcessRun> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'], timeout: 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** A line of a stack trace, which the CLI must never print. */
export const STACK_LINE = /^\s+at .+[(:]/m;
