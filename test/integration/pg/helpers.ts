/**
 * PostgreSQL for the quota store's tests: a schema of the test's own on the
 * machine's PostgreSQL (127.0.0.1:5432, trust auth, database `test`; CI's is
 * the same), dropped afterwards; and, for a restart under load, a private
 * server made by initdb in a temp dir (never the shared one), run as the
 * `postgres` user when the tests run as root.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../redis/helpers/redis-server.js';

export const PG_HOST = '127.0.0.1';
export const PG_PORT = Number(process.env.RC_PG_PORT ?? 5432);
export const PG_DATABASE = process.env.RC_PG_DATABASE ?? 'test';
export const PG_USER = process.env.RC_PG_USER ?? 'postgres';

export function pool(port = PG_PORT, max = 4): pg.Pool {
  const p = new pg.Pool({ host: PG_HOST, port, user: PG_USER, database: PG_DATABASE, max, connectionTimeoutMillis: 2000 });
  // A pool's idle clients report a server restart as an error event: the store sees it on its next query instead.
  p.on('error', () => undefined);
  return p;
}

/** A fresh schema on the shared server; `drop()` removes it and everything in it. */
export async function useSchema(p: pg.Pool): Promise<{ schema: string; drop: () => Promise<void> }> {
  const schema = `rc_test_${randomBytes(5).toString('hex')}`;
  try {
    await p.query(`CREATE SCHEMA ${schema}`);
  } catch (error) {
    throw new Error(`PostgreSQL at ${PG_HOST}:${PG_PORT} (database ${PG_DATABASE}, user ${PG_USER}) is needed by this test and did not answer: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return { schema, drop: async () => void (await p.query(`DROP SCHEMA ${schema} CASCADE`)) };
}

const BIN = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin'].find((d) => existsSync(join(d, 'initdb')));

function run(cmd: string, args: readonly string[]): Promise<string> {
  const asRoot = process.getuid?.() === 0;
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, [...args]];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { timeout: 60_000 }, (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${cmd} ${args.join(' ')}: ${error.message}\n${stderr}`))));
  });
}

export interface PrivatePostgres {
  readonly port: number;
  /** Stops the server (fast: open connections are terminated), keeps it down `downMs`, and starts it again. */
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** A private PostgreSQL server (initdb, trust auth, no fsync) on a free port, with database `test`. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  if (BIN === undefined) throw new Error('initdb not found under /usr/lib/postgresql/{15,16,17}/bin: install the PostgreSQL server package (postgresql)');
  const dir = mkdtempSync(join(tmpdir(), 'rc-pg-'));
  if (process.getuid?.() === 0) chownSync(dir, Number((await run('id', ['-u'])).trim()), Number((await run('id', ['-g'])).trim()));
  const data = join(dir, 'data');
  const port = await freePort();
  await run(join(BIN, 'initdb'), ['-D', data, '-A', 'trust', '-U', PG_USER, '--no-sync']);
  const ctl = (...args: string[]): Promise<string> => run(join(BIN, 'pg_ctl'), ['-D', data, '-w', '-t', '30', ...args]);
  // -l: the server writes its log there, never to (and holding open) this process's pipes.
  const start = (): Promise<string> => ctl('-o', `-p ${port} -k ${dir} -c listen_addresses=${PG_HOST} -c fsync=off -c full_page_writes=off`, '-l', join(dir, 'log'), 'start');
  await start();
  const admin = new pg.Client({ host: PG_HOST, port, user: PG_USER, database: 'postgres' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${PG_DATABASE}`);
  await admin.end();
  return {
    port,
    restart: async (downMs) => {
      await ctl('-m', 'fast', 'stop');
      await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
    stop: async () => {
      await ctl('-m', 'immediate', 'stop').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
