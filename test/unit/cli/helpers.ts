import { PassThrough } from 'node:stream';
import { run } from '../../../packages/cli/src/cli/run.js';

/** What one run of the CLI did. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of `runCli`. */
export interface RunOptions {
  /** Bytes on stdin (what `-` reads). Default: empty. */
  readonly input?: string | Buffer;
  /** The working directory relative paths resolve against during the run. Default: this process's. */
  readonly cwd?: string;
}

/**
 * Runs `ratecontract ...args` in this process: the CLI's own entry (`run`,
 * the function packages/cli/src/cli/main.ts calls with the process's
 * arguments and streams), with `input` on its stdin and its stdout and
 * stderr collected. What only a process can show (its exit status, a pipe,
 * the built files, its memory) is tested on the spawned command in
 * test/integration/cli. Never rejects on a non-zero exit.
 *
 * `cwd` changes this process's directory for the run and restores it
 * after (vitest runs each file in its own forked process, and a file's
 * tests one at a time).
 */
export async function runCli(args: readonly string[], options: RunOptions = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const stdin = new PassThrough();
  stdin.end(options.input ?? '');
  const io = {
    stdin,
    stdout: { write: (text: string): boolean => ((stdout += text), true) },
    stderr: { write: (text: string): boolean => ((stderr += text), true) },
  };
  const before = process.cwd();
  if (options.cwd !== undefined) process.chdir(options.cwd);
  try {
    const code = await run(args, io);
    return { code, stdout, stderr };
  } finally {
    process.chdir(before);
  }
}

/** A line of a stack trace, which the CLI must never print. */
export const STACK_LINE = /^\s+at .+[(:]/m;
