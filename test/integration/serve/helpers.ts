/**
 * Spawns `node dist/cli/main.js serve ...` as a user runs it (npm run build
 * first), each under `timeout --signal=KILL` so a leaked process dies by
 * itself, and killed when the test process exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export { ROOT } from '../../helpers/paths.js';
export { CLI_MAIN as MAIN } from '../../helpers/paths.js';
import { CLI_MAIN as MAIN, ROOT } from '../../helpers/paths.js';
/** Hard lifetime of every spawned service, seconds. */
const LIFETIME_S = 120;

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export interface LogLine {
  readonly event?: string;
  readonly [k: string]: unknown;
}

export interface Served {
  readonly proc: ChildProcess;
  readonly url: string;
  readonly adminUrl: string | undefined;
  readonly logs: LogLine[];
  stderr(): string;
  /** Resolves with the first log line (past or future) that `test` accepts. */
  waitForLog(test: (l: LogLine) => boolean, budgetMs?: number): Promise<LogLine>;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
  /** Sends a signal to the service process. */
  signal(name: NodeJS.Signals): void;
  /** SIGTERM and wait; SIGKILL past the budget. */
  stop(): Promise<number | null>;
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `ratecontract ...args` to the end (for commands that exit at once). */
export async function runCli(args: readonly string[], budgetMs = 20_000): Promise<RunResult> {
  const proc = spawn('timeout', ['--signal=KILL', String(Math.ceil(budgetMs / 1000)), process.execPath, MAIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code] = (await once(proc, 'exit')) as [number | null];
  live.delete(proc);
  return { code, stdout, stderr };
}

/** A spawned `ratecontract <command>`: its JSON log lines (stdout) as they come, stderr, signals. */
export interface Spawned {
  readonly proc: ChildProcess;
  readonly logs: LogLine[];
  readonly stderr: () => string;
  /** Called with each stderr chunk as it arrives (after it is added to `stderr()`). */
  readonly onStderr: (listener: () => void) => void;
  /** Resolves with the first log line (past or future) that `test` accepts. */
  readonly waitForLog: (test: (l: LogLine) => boolean, budgetMs?: number) => Promise<LogLine>;
  readonly exited: Promise<number | null>;
  readonly signal: (name: NodeJS.Signals) => void;
  /** SIGTERM and wait; SIGKILL past the budget. */
  readonly stop: () => Promise<number | null>;
}

/** Spawns `ratecontract ...args` (a long-running command) under `timeout --signal=KILL`, killed when the test process exits. */
export function spawnCli(args: readonly string[]): Spawned {
  const proc = spawn('timeout', ['--signal=KILL', String(LIFETIME_S), process.execPath, MAIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  const logs: LogLine[] = [];
  const waiters: Array<{ test: (l: LogLine) => boolean; resolve: (l: LogLine) => void }> = [];
  const stderrListeners: Array<() => void> = [];
  let err = '';
  let buf = '';
  proc.stderr.on('data', (d: Buffer) => {
    err += d.toString();
    for (const l of stderrListeners) l();
  });
  proc.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      let parsed: LogLine;
      try {
        parsed = JSON.parse(line) as LogLine;
      } catch {
        parsed = { event: '(not json)', line };
      }
      logs.push(parsed);
      for (const w of [...waiters]) {
        if (w.test(parsed)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(parsed);
        }
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => {
    proc.once('exit', (code) => {
      live.delete(proc);
      resolve(code);
    });
  });
  const waitForLog = (test: (l: LogLine) => boolean, budget = 10_000): Promise<LogLine> => {
    const past = logs.find(test);
    if (past !== undefined) return Promise.resolve(past);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching log line within ${budget} ms; logs: ${JSON.stringify(logs)}; stderr: ${err}`)), budget);
      waiters.push({
        test,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
    });
  };
  // `timeout` forwards only the first of repeated signals: signal the service itself (its pid is on every log line).
  const signal = (name: NodeJS.Signals): void => {
    if (proc.exitCode !== null) return;
    const pid = logs.find((l) => typeof l.pid === 'number')?.pid as number | undefined;
    if (pid === undefined) proc.kill(name);
    else process.kill(pid, name);
  };
  const stop = async (): Promise<number | null> => {
    if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
    signal('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  return { proc, logs, stderr: () => err, onStderr: (l) => stderrListeners.push(l), waitForLog, exited, signal, stop };
}

/** Starts `ratecontract serve ...args` and resolves once it printed its listening line. */
export function serve(args: readonly string[], budgetMs = 20_000): Promise<Served> {
  return spawnServer('serve', args, budgetMs);
}

/** Starts a server command (`serve`, `decide`) with `args` and resolves once it printed its listening line. */
export async function spawnServer(command: string, args: readonly string[], budgetMs = 20_000): Promise<Served> {
  const s = spawnCli([command, ...args]);
  const listening = new Promise<{ url: string; adminUrl: string | undefined }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} did not listen within ${budgetMs} ms; stderr: ${s.stderr()}`)), budgetMs);
    const look = (): void => {
      const m = /^listening (http:\/\/\S+)$/m.exec(s.stderr());
      const a = /^admin (http:\/\/\S+)/m.exec(s.stderr());
      // The admin line follows the listening line in the same write.
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve({ url: m[1], adminUrl: a?.[1] });
      }
    };
    s.onStderr(look);
    void s.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${command} exited (${String(code)}) before listening; stderr: ${s.stderr()}`));
    });
  });
  const { url, adminUrl } = await listening;
  // Signals go to the service's pid, read from its log lines; stdout can lag stderr. A signal sent to the `timeout`
  // wrapper instead would end the wrapper and leave the service running. (With --log-level above info, no line comes.)
  if (!args.some((a, i) => a === '--log-level' && ['fatal', 'error', 'warn', 'silent'].includes(args[i + 1] ?? ''))) await s.waitForLog((l) => typeof l.pid === 'number', budgetMs);
  return { proc: s.proc, url, adminUrl, logs: s.logs, stderr: s.stderr, waitForLog: s.waitForLog, exited: s.exited, signal: s.signal, stop: s.stop };
}

/** A node:http server on 127.0.0.1 with a free port. */
export async function upstreamServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
