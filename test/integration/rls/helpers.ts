/**
 * Spawns `node dist/cli/main.js rls ...` as a user runs it (npm run build
 * first; test/service/helpers.ts `spawnCli`), and a real @grpc/grpc-js
 * client on the shipped protos.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PROTO_DIR } from '../../helpers/paths.js';
import { spawnCli, type LogLine } from '../serve/helpers.js';

export interface Rls {
  readonly grpcAddress: string;
  readonly httpUrl: string;
  readonly adminUrl: string | undefined;
  readonly logs: LogLine[];
  readonly client: RlsClient;
  stderr(): string;
  waitForLog(test: (l: LogLine) => boolean, budgetMs?: number): Promise<LogLine>;
  readonly exited: Promise<number | null>;
  signal(name: NodeJS.Signals): void;
  stop(): Promise<number | null>;
}

/** A config directory with these files (name -> YAML text). */
export function configDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rc-rls-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

export interface Status {
  code: string;
  current_limit?: { requests_per_unit?: number; unit?: string; name?: string } | null;
  limit_remaining?: number;
  duration_until_reset?: { seconds?: number; nanos?: number } | null;
}
export interface Response {
  overall_code: string;
  statuses: Status[];
  response_headers_to_add: Array<{ key: string; value: string }>;
}
export interface Descriptor {
  entries: Array<{ key: string; value?: string }>;
  limit?: { requests_per_unit: number; unit: string };
  hits_addend?: { value: number };
}
export interface Request {
  domain: string;
  descriptors: Descriptor[];
  hits_addend?: number;
}

export interface RlsClient {
  should(request: Request, deadlineMs?: number): Promise<Response>;
  health(service?: string): Promise<string>;
  watchHealth(service?: string): grpc.ClientReadableStream<{ status: string }>;
  close(): void;
}

/** Duration of a status in ms. */
export function resetMs(s: Status): number | undefined {
  const d = s.duration_until_reset;
  if (d === undefined || d === null) return undefined;
  return (d.seconds ?? 0) * 1000 + (d.nanos ?? 0) / 1e6;
}

const PROTO_OPTIONS: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: true, arrays: true, oneofs: true, includeDirs: [PROTO_DIR] };

type Ctor = new (address: string, creds: grpc.ChannelCredentials) => grpc.Client & Record<string, (...a: unknown[]) => unknown>;

export function rlsClient(address: string): RlsClient {
  const def = protoLoader.loadSync(['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'], PROTO_OPTIONS);
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: Ctor } } } };
    grpc: { health: { v1: { Health: Ctor } } };
  };
  const rls = new pkg.envoy.service.ratelimit.v3.RateLimitService(address, grpc.credentials.createInsecure());
  const health = new pkg.grpc.health.v1.Health(address, grpc.credentials.createInsecure());
  return {
    should: (request, deadlineMs = 5_000) =>
      new Promise((resolve, reject) => {
        (rls.ShouldRateLimit as (r: unknown, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, v: Response) => void) => void)(request, { deadline: Date.now() + deadlineMs }, (e, v) =>
          e === null ? resolve(v) : reject(e),
        );
      }),
    health: (service = '') =>
      new Promise((resolve, reject) => {
        (health.Check as (r: unknown, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, v: { status: string }) => void) => void)({ service }, { deadline: Date.now() + 5_000 }, (e, v) =>
          e === null ? resolve(v.status) : reject(e),
        );
      }),
    watchHealth: (service = '') => (health.Watch as (r: unknown) => grpc.ClientReadableStream<{ status: string }>)({ service }),
    close: () => {
      rls.close();
      health.close();
    },
  };
}

/** Starts `ratecontract rls ...args` on free ports and resolves once its startup line is out. */
export async function startRls(args: readonly string[], budgetMs = 20_000): Promise<Rls> {
  const s = spawnCli(['rls', '--grpc-port', '0', '--http-port', '0', '--admin-port', '0', ...args]);
  const startup = await Promise.race([
    s.waitForLog((l) => l.event === 'startup', budgetMs),
    s.exited.then((code) => {
      throw new Error(`rls exited (${String(code)}) before starting; stderr: ${s.stderr()}`);
    }),
  ]);
  const grpcAddress = startup.grpc as string;
  const client = rlsClient(grpcAddress);
  const stop = (): Promise<number | null> => {
    client.close();
    return s.stop();
  };
  return { grpcAddress, httpUrl: startup.url as string, adminUrl: startup.adminUrl as string | undefined, logs: s.logs, client, stderr: s.stderr, waitForLog: s.waitForLog, exited: s.exited, signal: s.signal, stop };
}

/** One request's descriptor from `key=value` pairs (`key` alone for an empty value). */
export function d(...pairs: string[]): Descriptor {
  return { entries: pairs.map((p) => (p.includes('=') ? { key: p.slice(0, p.indexOf('=')), value: p.slice(p.indexOf('=') + 1) } : { key: p, value: '' })) };
}
