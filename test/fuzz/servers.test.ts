/**
 * The servers' inputs, fuzzed over the wire against `ratecontract serve`
 * and `ratecontract rls` spawned as a user runs them (npm run build first):
 * raw HTTP/1.1 requests (methods, targets, query strings, forwarding
 * headers, bodies) to the API and admin ports, `/json` bodies, and raw
 * gRPC messages (valid `RateLimitRequest` bytes, mutated, and random bytes).
 *
 * Every request gets an answer within `ANSWER_MS`, never a 500 or a 502
 * (503 only from a limit or /readyz; 501 only for an upgrade without
 * --upstream); every gRPC call ends in OK or a status error; afterwards the
 * process still answers /healthz and logged no error line. Budget:
 * `FUZZ_BUDGET_MS` (default 3000) per server and kind of input.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCorpus } from './corpus.js';
import { configDir, startRls, type Rls } from '../integration/rls/helpers.js';
import { ROOT, serve, type LogLine, type Served } from '../integration/serve/helpers.js';
import { encode, requestArb, send, type RawAnswer } from './http-inputs.js';
import { applyMutations, mutationsArb } from './mutate.js';
import { BUDGET_MS } from './suite.js';
import { DESCRIPTOR_CONFIG, requestJson } from './targets/descriptors.js';

/** Bound on one answer, ms: generous, as the machine is shared; a hang is seconds past it. */
const ANSWER_MS = 5000;
/** Fewest requests that count as a run of one server and kind. */
const MIN_REQUESTS = 100;

const CONTRACT = `limits:
  - { name: phone, purpose: abuse, algorithm: gcra, limit: 5, window: 1m, key: body.phone, reason: fuzz }
  - { name: tenant, purpose: shedding, limit: 100, window: 1m, key: header.x-tenant, reason: fuzz }
  - { name: query, purpose: shedding, limit: 100, window: 1m, key: query.id, reason: fuzz }
  - { name: ip, purpose: shedding, algorithm: sliding-window, limit: 1000, window: 1m, key: ip, reason: fuzz }
  - { name: capacity, purpose: shedding, limit: 100000, window: 1s, key: global, reason: fuzz }
routes:
  - { match: POST /otp/send, limits: [phone, ip, capacity] }
  - { match: GET /search, limits: [query, tenant, ip] }
  - { match: '* /static/*', limits: [ip] }
  - { match: 'GET /users/:id', limits: [tenant] }
  - { match: GET /health, limits: [] }
http:
  trustProxy: [loopback]
`;

const API_PATHS = ['/otp/send', '/search', '/static/a.css', '/users/1', '/health', '/login', '/'];
const ADMIN_PATHS = ['/metrics', '/contract', '/healthz', '/readyz', '/stats.json', '/', '/rlconfig'];

/** Whether a status may answer a request on `path` (its path, query dropped). */
function acceptable(status: number, path: string, port: 'api' | 'admin' | 'json'): boolean {
  if (status < 500) return true;
  if (status === 501) return port === 'api';
  if (status === 503) return port === 'api' || /^\/+readyz/i.test(path);
  return false;
}

/** Drives `url` with raw requests for `ms`; returns the number sent and what went wrong. */
async function drive(url: string, arb: fc.Arbitrary<{ bytes: string; path: string }>, port: 'api' | 'admin' | 'json', ms: number): Promise<{ runs: number; failures: string[] }> {
  const failures: string[] = [];
  let runs = 0;
  const seed = process.env.FC_SEED;
  await fc.assert(
    fc.asyncProperty(arb, async ({ bytes, path }) => {
      runs++;
      const answer: RawAnswer = await send(url, bytes, ANSWER_MS);
      const bad = 'error' in answer ? answer.error : acceptable(answer.status, path, port) ? undefined : `answered ${answer.head}`;
      if (bad !== undefined) {
        failures.push(`${bad} to ${JSON.stringify(bytes.slice(0, 300))}`);
        throw new Error(`${port} ${url}: ${bad} to ${JSON.stringify(bytes.slice(0, 300))}`);
      }
    }),
    { numRuns: 10_000_000, interruptAfterTimeLimit: ms, markInterruptAsFailure: false, ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}) },
  );
  return { runs, failures };
}

const raw = (paths: readonly string[], methods?: readonly string[]): fc.Arbitrary<{ bytes: string; path: string }> =>
  requestArb(paths, methods).map((r) => ({ bytes: encode(r), path: r.target.split('?')[0] ?? '' }));

/** Error lines of a pino log (level 50 and up), and the events that mean a request went wrong inside. */
function errorLines(logs: readonly LogLine[]): LogLine[] {
  return logs.filter((l) => (typeof l.level === 'number' && l.level >= 50) || ['request-error', 'guard-error', 'rls-error'].includes(l.event ?? ''));
}

async function healthy(adminUrl: string): Promise<number> {
  const r = await fetch(`${adminUrl}/healthz`, { signal: AbortSignal.timeout(ANSWER_MS) });
  await r.body?.cancel();
  return r.status;
}

describe('fuzz: the servers over the wire', () => {
  describe('ratecontract serve', () => {
    let s: Served;
    beforeAll(async () => {
      const dir = configDir({});
      const file = join(dir, 'ratecontract.yaml');
      writeFileSync(file, CONTRACT);
      s = await serve(['--config', file, '--port', '0', '--admin-port', '0']);
    });
    afterAll(async () => {
      await s.stop();
    });

    it('answers every request of the corpus (test/fuzz/corpus/servers, raw requests to the API port)', async () => {
      const failures: string[] = [];
      for (const e of readCorpus('servers')) {
        const answer = await send(s.url, e.text, ANSWER_MS);
        if ('error' in answer || !acceptable(answer.status, e.text.split(' ')[1]?.split('?')[0] ?? '', 'api')) failures.push(`${e.file}: ${'error' in answer ? answer.error : answer.head}`);
      }
      expect(failures).toEqual([]);
    });

    it('the API port answers every request, never with a 500 or 502', async () => {
      const { runs } = await drive(s.url, raw(API_PATHS, ['GET', 'POST', 'HEAD', 'PUT']), 'api', BUDGET_MS);
      expect(runs).toBeGreaterThanOrEqual(MIN_REQUESTS);
    });

    it('the admin port answers every method, path and query string with 200, 4xx or (readyz) 503', async () => {
      const { runs } = await drive(s.adminUrl as string, raw(ADMIN_PATHS, ['GET', 'HEAD']), 'admin', BUDGET_MS * 0.5);
      expect(runs).toBeGreaterThanOrEqual(MIN_REQUESTS / 2);
    });

    it('is still up and logged no error', async () => {
      expect(await healthy(s.adminUrl as string)).toBe(200);
      expect(s.proc.exitCode).toBe(null);
      expect(errorLines(s.logs)).toEqual([]);
    });
  });

  describe('ratecontract rls', () => {
    let r: Rls;
    beforeAll(async () => {
      r = await startRls(['--config', configDir({ 'edge.yaml': DESCRIPTOR_CONFIG }), '--response-headers']);
    });
    afterAll(async () => {
      await r.stop();
    });

    it('/json answers every body with 200, 429 or 400, and other paths and methods with 4xx', async () => {
      const json = fc.oneof(
        { weight: 4, arbitrary: requestJson.map((body) => ({ method: 'POST', target: '/json', headers: [['Content-Type', 'application/json'] as const], body })) },
        { weight: 2, arbitrary: fc.tuple(requestJson, mutationsArb(['{', '}', '"', ',', '__proto__', '[', 'null', '1e999'], 0)).map(([body, m]) => ({ method: 'POST', target: '/json', headers: [], body: applyMutations(body, m, []) })) },
        { weight: 1, arbitrary: requestArb(['/json', '/healthcheck']) },
      );
      const { runs } = await drive(r.httpUrl, json.map((q) => ({ bytes: encode(q), path: q.target.split('?')[0] ?? '' })), 'json', BUDGET_MS);
      expect(runs).toBeGreaterThanOrEqual(MIN_REQUESTS);
    });

    it('the admin port answers every method, path and query string with 200, 4xx or (readyz) 503', async () => {
      const { runs } = await drive(r.adminUrl as string, raw(ADMIN_PATHS, ['GET', 'HEAD']), 'admin', BUDGET_MS * 0.5);
      expect(runs).toBeGreaterThanOrEqual(MIN_REQUESTS / 2);
    });

    it('gRPC ShouldRateLimit ends every message, valid, mutated or random bytes, in OK or a status error', async () => {
      const def = protoLoader.loadSync(['envoy/service/ratelimit/v3/rls.proto'], { keepCase: true, longs: Number, enums: String, defaults: false, arrays: true, oneofs: true, includeDirs: [join(ROOT, 'packages', 'cli', 'proto')] });
      const method = def['envoy.service.ratelimit.v3.RateLimitService'] as unknown as { ShouldRateLimit: { path: string; requestSerialize: (v: unknown) => Buffer } };
      const encodeRequest = (text: string): Buffer => {
        try {
          return method.ShouldRateLimit.requestSerialize(JSON.parse(text));
        } catch {
          return Buffer.from(text);
        }
      };
      const client = new grpc.Client(r.grpcAddress, grpc.credentials.createInsecure());
      const statuses = new Map<string, number>();
      let runs = 0;
      try {
        const bytes = fc.oneof(
          requestJson.map(encodeRequest),
          fc.tuple(requestJson, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 6 }), fc.nat()).map(([text, flips, cut]) => {
            const b = Buffer.from(encodeRequest(text));
            for (const [at, v] of flips) if (b.length > 0) b[at % b.length] = v;
            return b.subarray(0, b.length === 0 ? 0 : b.length - (cut % Math.max(1, Math.ceil(b.length / 4))));
          }),
          fc.uint8Array({ maxLength: 256 }).map((a) => Buffer.from(a)),
        );
        await fc.assert(
          fc.asyncProperty(bytes, async (payload) => {
            runs++;
            const code = await new Promise<string>((resolve) => {
              client.makeUnaryRequest(method.ShouldRateLimit.path, (b: Buffer) => b, (b: Buffer) => b, payload, { deadline: Date.now() + ANSWER_MS }, (error) => {
                resolve(error === null ? 'OK' : grpc.status[error.code]);
              });
            });
            statuses.set(code, (statuses.get(code) ?? 0) + 1);
            // OK, UNKNOWN (a request the service refuses), INTERNAL (bytes grpc-js cannot decode); never DEADLINE_EXCEEDED or UNAVAILABLE.
            expect(['OK', 'UNKNOWN', 'INTERNAL'], `status ${code} for ${payload.toString('hex').slice(0, 120)}`).toContain(code);
          }),
          { numRuns: 10_000_000, interruptAfterTimeLimit: BUDGET_MS, markInterruptAsFailure: false },
        );
      } finally {
        client.close();
      }
      expect(runs).toBeGreaterThanOrEqual(MIN_REQUESTS);
      expect(statuses.get('OK') ?? 0).toBeGreaterThan(0);
    });

    it('is still up and logged no error', async () => {
      expect(await healthy(r.adminUrl as string)).toBe(200);
      expect(errorLines(r.logs)).toEqual([]);
    });
  });
});
