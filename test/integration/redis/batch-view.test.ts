/**
 * chain.lua reads each distinct key of a call once and writes it back once
 * (the in-memory view in common.lua). The property: a random batch whose
 * chains share keys (a global key, a few busy tenants), over all seven
 * algorithms with concurrency leases, decided in one script call, gives
 * exactly what the TypeScript algorithms give deciding the chains one by one
 * in order (runChain), in client time and in server time; in client time the
 * stored states match too. Then the command counts: one GET and one SET per
 * distinct key per call.
 * Time-budgeted: RC_PROPERTY_BUDGET_MS / 4 per time mode (default 3 s locally).
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { algorithms, type AlgorithmName, type CompiledLimit, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';
import { runChain } from '../../../packages/ratecontract/src/core/chain.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { batchArgs, decodeBatchReply, type ChainCall } from '../../../packages/ratecontract/src/stores/redis/codec.js';
import { decodeState } from '../../../packages/ratecontract/src/stores/redis/state-codec.js';
import { chainScript } from '../../../packages/ratecontract/src/stores/redis/scripts.generated.js';
import { useStandaloneIoredis } from './helpers/clients.js';
import { FULL_BUDGETS } from '../../helpers/tier.js';

const BUDGET_MS = Math.floor(Number(process.env.RC_PROPERTY_BUDGET_MS ?? (FULL_BUDGETS ? 30_000 : 12_000)) / 4);
const ioredis = useStandaloneIoredis({ beforeAll, afterAll });
const raw = (): Redis => ioredis().client as Redis;
const GRACE_MS = 3_600_000;

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'];

const limitArb = fc.record({
  algorithm: fc.constantFrom(...ALGORITHMS),
  limit: fc.integer({ min: 1, max: 8 }),
  window: fc.constantFrom(1, 5, 100, 1000, 60_000),
  burst: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
  queue: fc.boolean(),
  shadow: fc.boolean(),
  countRejected: fc.boolean(),
});
type LimitSpec = typeof limitArb extends fc.Arbitrary<infer T> ? T : never;

function compiled(l: LimitSpec, i: number): CompiledLimit {
  const usesBurst = l.algorithm === 'token-bucket' || l.algorithm === 'gcra' || l.algorithm === 'leaky-bucket';
  return compileLimit(
    {
      name: `l${i}`,
      purpose: 'shedding',
      algorithm: l.algorithm,
      limit: l.limit,
      window: l.window,
      shadow: l.shadow,
      countRejected: l.countRejected,
      ...(usesBurst && l.burst !== undefined ? { burst: l.burst } : {}),
      ...(l.algorithm === 'leaky-bucket' && l.queue ? { mode: 'queue' as const } : {}),
    },
    `limits[${i}]`,
    new Set(),
  );
}

/* A chain's dt may be negative: in client-time mode processes with different clocks write the same key,
   so a key can hold leases out of expiry order. */
/** One op of a chain: which limit, which of its keys (0 is everyone's: the global key), the cost (undefined: the limit's). */
const opArb = fc.record({ limit: fc.nat(), key: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3 })), cost: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }) });
const batchArb = fc.record({
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 3000 })),
  chains: fc.array(fc.record({ dt: fc.oneof(fc.constant(0), fc.integer({ min: -3, max: 3 })), ops: fc.array(opArb, { minLength: 1, maxLength: 4 }) }), { minLength: 1, maxLength: 16 }),
});

type Batch = typeof batchArb extends fc.Arbitrary<infer T> ? T : never;

/**
 * What the reply can carry: chain.lua sends "never" (Infinity) as -1, so a
 * retryAfterMs of exactly -1, which only a clock that went backwards produces
 * (a known limit of the wire format, not of the view), arrives as Infinity.
 */
function wire(rs: StoreOpResult[]): StoreOpResult[] {
  return rs.map((r) => (r.retryAfterMs === -1 ? { ...r, retryAfterMs: Infinity } : r));
}

function show(r: StoreOpResult): string {
  return JSON.stringify({ ...r, retryAfterMs: r.retryAfterMs === Infinity ? 'Infinity' : r.retryAfterMs });
}

async function runScript(keys: string[], args: string[]): Promise<unknown> {
  return raw().eval(chainScript.text, keys.length, ...keys, ...args);
}

/**
 * Decides `plan` (batches of chains) as one chain.lua call per batch and,
 * chain by chain, through runChain over a map of TypeScript states; throws on
 * the first difference. Returns the number of ops that shared a key with an
 * earlier op of their batch.
 */
async function compare(specs: readonly LimitSpec[], plan: readonly Batch[], clientTime: boolean): Promise<number> {
  const limits = specs.map(compiled);
  const prefix = `bv:${randomBytes(5).toString('hex')}:`;
  const states = new Map<string, unknown>();
  /** The `now` of each key's last write: a key is stored iff its state had life left then. */
  const writtenAt = new Map<string, number>();
  let now = 1_700_000_000_000;
  let shared = 0;
  let lease = 0;
  for (const batch of plan) {
    now += batch.dt;
    const chains: ChainCall[] = [];
    const chainKeys: string[][] = [];
    const seen = new Set<string>();
    let at = now;
    for (const c of batch.chains) {
      at += c.dt;
      const ops: StoreOp[] = [];
      const keys: string[] = [];
      for (const o of c.ops) {
        const limit = limits[o.limit % limits.length] as CompiledLimit;
        const key = `${prefix}${limit.id}:${o.key}`;
        if (seen.has(key)) shared++;
        seen.add(key);
        ops.push({ spec: limit, key: String(o.key), cost: o.cost ?? limit.cost, leaseId: limit.algorithm === 'concurrency' ? `lease-${lease++}` : undefined });
        keys.push(key);
      }
      chains.push({ ops, now: clientTime ? at : undefined });
      chainKeys.push(keys);
    }
    const reply = decodeBatchReply(await runScript(chainKeys.flat(), batchArgs(chains, clientTime ? GRACE_MS : 0, false)), chains, false);
    chains.forEach((c, j) => {
      const keys = chainKeys[j] as string[];
      const decidedAt = (reply[j] as { now: number }).now;
      if (clientTime) expect(decidedAt).toBe(c.now);
      const want = wire(runChain(c.ops, decidedAt, { get: (i) => states.get(keys[i] as string), set: (i, s) => {
          states.set(keys[i] as string, s);
          writtenAt.set(keys[i] as string, decidedAt);
        } }));
      const got = (reply[j] as { results: StoreOpResult[] }).results.map((r) => ({ allowed: r.allowed, consumed: r.consumed, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, delayMs: r.delayMs }));
      if (got.map(show).join() !== want.map(show).join()) {
        throw new Error(`chain ${j} at ${decidedAt}: expected ${want.map(show).join(' ')}, got ${got.map(show).join(' ')}`);
      }
      now = Math.max(now, decidedAt);
    });
    if (!clientTime) continue;
    // The stored states: one write per key, holding what the last check left (a spent state: no key).
    for (const [key, state] of states) {
      const limit = limits.find((l) => key.startsWith(`${prefix}${l.id}:`)) as CompiledLimit;
      const live = state !== undefined && algorithms[limit.algorithm].expiresAt(state, limit.params) > (writtenAt.get(key) as number);
      const stored = await raw().getBuffer(key);
      if (!live) {
        expect(stored, key).toBeNull();
        continue;
      }
      if (stored === null) throw new Error(`${key}: missing, expected ${JSON.stringify(state)}`);
      expect(decodeState(limit.algorithm, stored), key).toEqual(state);
      expect(await raw().pttl(key)).toBeGreaterThan(GRACE_MS / 2);
    }
  }
  return shared;
}

async function commandCalls(): Promise<Record<string, number>> {
  const info = await raw().info('commandstats');
  const out: Record<string, number> = {};
  for (const m of info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) out[m[1] as string] = Number(m[2]);
  return out;
}

describe('chain.lua: one read and one write per distinct key per call', () => {
  it('an OTP-shaped batch of 16 checks (distinct recipients, one tenant, one IP, one global key) costs 19 GETs and 19 SETs, not 64', async () => {
    const otp = [
      { name: 'recipient', algorithm: 'fixed-window', limit: 5, window: 3_600_000 },
      { name: 'tenant', algorithm: 'sliding-window', limit: 1000, window: 60_000 },
      { name: 'ip', algorithm: 'token-bucket', limit: 20, window: 60_000 },
      { name: 'global', algorithm: 'gcra', limit: 10_000, window: 1000 },
    ].map((d, i) => compileLimit({ ...d, purpose: 'abuse', algorithm: d.algorithm as AlgorithmName }, `limits[${i}]`, new Set()));
    const prefix = `bv:${randomBytes(5).toString('hex')}:`;
    const chains: ChainCall[] = [];
    const keys: string[] = [];
    for (let c = 0; c < 16; c++) {
      const userKeys = [`r${c}`, 't', 'ip', 'all'];
      chains.push({ ops: otp.map((limit, i) => ({ spec: limit, key: userKeys[i] as string, cost: 1, leaseId: undefined })), now: undefined });
      otp.forEach((limit, i) => keys.push(`${prefix}${limit.id}:${userKeys[i] as string}`));
    }
    const before = await commandCalls();
    const reply = decodeBatchReply(await runScript(keys, batchArgs(chains, 0, false)), chains, false);
    const after = await commandCalls();
    expect(reply.every((c) => c.results.every((r) => r.consumed))).toBe(true);
    expect(reply.map((c) => c.results[3]?.remaining)).toEqual(Array.from({ length: 16 }, (_, i) => 9999 - i));
    expect({ get: (after.get ?? 0) - (before.get ?? 0), set: (after.set ?? 0) - (before.set ?? 0) }).toEqual({ get: 19, set: 19 });
  });

  it('a batch of 16 concurrency checks on one key holding 100 leases reads and writes the lease list once', async () => {
    const limit = compileLimit({ name: 'c', purpose: 'shedding', algorithm: 'concurrency', limit: 200, window: 60_000 }, 'limits[0]', new Set());
    const key = `bv:${randomBytes(5).toString('hex')}:c:k`;
    const fill: ChainCall[] = Array.from({ length: 100 }, (_, i) => ({ ops: [{ spec: limit, key: 'k', cost: 1, leaseId: `held-${i}` }], now: undefined }));
    await runScript(Array<string>(100).fill(key), batchArgs(fill, 0, false));
    const batch: ChainCall[] = Array.from({ length: 16 }, (_, i) => ({ ops: [{ spec: limit, key: 'k', cost: 1, leaseId: `new-${i}` }], now: undefined }));
    const before = await commandCalls();
    const reply = decodeBatchReply(await runScript(Array<string>(16).fill(key), batchArgs(batch, 0, false)), batch, false);
    const after = await commandCalls();
    expect(reply.map((c) => c.results[0]?.remaining)).toEqual(Array.from({ length: 16 }, (_, i) => 200 - 101 - i));
    expect({ get: (after.get ?? 0) - (before.get ?? 0), set: (after.set ?? 0) - (before.set ?? 0) }).toEqual({ get: 1, set: 1 });
    expect((decodeState('concurrency', (await raw().getBuffer(key)) as Buffer) as unknown[]).length).toBe(116);
  });

  it('the reply is the smallest that carries the decisions: 2 integers per plain admitted op, the server time once per call, a code only for the rest', async () => {
    const gcra = compileLimit({ name: 'g', purpose: 'shedding', algorithm: 'gcra', limit: 2, window: 60_000 }, 'limits[0]', new Set());
    const queue = compileLimit({ name: 'q', purpose: 'shedding', algorithm: 'leaky-bucket', mode: 'queue', limit: 10, window: 1000 }, 'limits[1]', new Set());
    const prefix = `bv:${randomBytes(5).toString('hex')}:`;
    const op = (limit: CompiledLimit, key: string, cost: number): StoreOp => ({ spec: limit, key, cost, leaseId: undefined });
    const chains: ChainCall[] = [
      { ops: [op(gcra, 'a', 1)], now: undefined },
      { ops: [op(gcra, 'a', 1)], now: undefined },
      { ops: [op(gcra, 'a', 1)], now: undefined },
      { ops: [op(gcra, 'a', 0)], now: undefined },
      { ops: [op(queue, 'b', 1)], now: undefined },
      { ops: [op(queue, 'b', 1)], now: undefined },
    ];
    const keys = chains.map((c) => `${prefix}${c.ops[0]?.spec.id as string}:${c.ops[0]?.key as string}`);
    const reply = (await runScript(keys, batchArgs(chains, 0, false))) as number[];
    // now; admitted x2 (remaining, reset); rejected (-2, remaining, reset, retry); a cost-0 peek (-1, remaining, reset);
    // a queued admission without delay, then one with a delay (-3, remaining, reset, delay).
    expect(reply.length).toBe(1 + 2 + 2 + 4 + 3 + 2 + 4);
    expect([reply[1], reply[3], reply[5], reply[9], reply[14]]).toEqual([1, 0, -2, -1, -3]);
    const decoded = decodeBatchReply(reply, chains, false);
    expect(decoded.map((c) => c.now)).toEqual(Array<number>(6).fill(reply[0] as number));
    expect(decoded.map((c) => [c.results[0]?.allowed, c.results[0]?.consumed, c.results[0]?.delayMs])).toEqual([
      [true, true, 0],
      [true, true, 0],
      [false, false, 0],
      [true, false, 0],
      [true, true, 0],
      [true, true, 100],
    ]);
    // Client time: the caller knows each chain's now, so the reply does not carry it.
    const at = 1_700_000_000_000;
    const client: ChainCall[] = [{ ops: [op(gcra, 'c', 1)], now: at }, { ops: [op(gcra, 'd', 1)], now: at + 5 }];
    const clientReply = (await runScript([`${prefix}g:c`, `${prefix}g:d`], batchArgs(client, GRACE_MS, false))) as number[];
    expect(clientReply).toEqual([1, 30_000, 1, 30_000]);
    expect(decodeBatchReply(clientReply, client, false).map((c) => c.now)).toEqual([at, at + 5]);
    // A reply that does not fit the chains is refused.
    expect(() => decodeBatchReply([...clientReply, 0], client, false)).toThrow(/malformed chain reply/);
    expect(() => decodeBatchReply([-4, 0, 0, 0], client.slice(0, 1), false)).toThrow(/malformed chain reply/);
  });

  for (const clientTime of [true, false]) {
    it(`a batch with repeated keys decides as the same chains one by one through the TypeScript algorithms (property, ${clientTime ? 'client' : 'server'} time)`, async () => {
      let batches = 0;
      let shared = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(limitArb, { minLength: 1, maxLength: 4 }), fc.array(batchArb, { minLength: 1, maxLength: 6 }), async (specs, plan) => {
          shared += await compare(specs, plan, clientTime);
          batches += plan.length;
        }),
        { numRuns: 10_000, interruptAfterTimeLimit: BUDGET_MS, markInterruptAsFailure: false },
      );
      // A starved run must not pass silently.
      expect(batches).toBeGreaterThan(30);
      expect(shared).toBeGreaterThan(200);
    }, BUDGET_MS + 30_000);
  }
});
