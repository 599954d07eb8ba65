/**
 * The stored state format (format 2: packed little-endian doubles) is the
 * same on both sides: a state packed by the TypeScript codec
 * (src/stores/redis/state-codec.ts) decodes in the Lua twins to the same
 * numbers and packs back to the same bytes, and a state packed in Lua
 * decodes in TypeScript to the state it was made from, at every magnitude
 * up to 2^53 (property, every algorithm). Values of the wrong size are
 * refused on both sides, never read as an empty state.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlgorithmName } from '../../../packages/ratecontract/src/algorithms/types.js';
import { compileLimit } from '../../../packages/ratecontract/src/core/compile.js';
import { SLIDING_LOG_MAX_ENTRIES } from '../../../packages/ratecontract/src/core/compile.js';
import { redisStore } from '../../../packages/ratecontract/src/stores/redis/index.js';
import { decodeState, encodeState } from '../../../packages/ratecontract/src/stores/redis/state-codec.js';
import { fcBudget } from '../../helpers/fc-budget.js';
import { useStandaloneIoredis } from './helpers/clients.js';
import { SERVER_IMPL } from './helpers/redis-server.js';

const ioredis = useStandaloneIoredis({ beforeAll, afterAll });
const io = (): Redis => ioredis().client as Redis;

const LUA = join(import.meta.dirname, '../../../packages/ratecontract/src/stores/redis/lua/includes');
const INCLUDES = ['common', 'fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'];

/**
 * The Lua side of the test: the twins' own decode / encode (the includes as
 * the scripts use them), driven from ARGV. `decode`: ARGV[3] is a stored
 * value; the reply is the value packed again, then the decoded numbers (as
 * '%.0f' text, exact) and lease ids. `encode`: ARGV[3..] are the numbers
 * (and lease ids); the reply is the packed value.
 */
const HARNESS = `${INCLUDES.map((name) => readFileSync(join(LUA, `${name}.lua`), 'utf8')).join('\n')}
local NAMES = {
  ['fixed-window'] = { 'w', 'c' }, ['sliding-window'] = { 'w', 'c', 'p' }, ['token-bucket'] = { 'u', 't' },
  ['leaky-bucket'] = { 'l', 't' }, ['gcra'] = { 't', 'f' },
}
local name, mode = ARGV[1], ARGV[2]
local a = algo(name)
if mode == 'decode' then
  local s = a.decode(ARGV[3])
  local out = { a.encode(s) }
  if name == 'sliding-log' then
    for i = 1, #s do out[#out + 1] = fmt(s[i]) end
  elseif name == 'concurrency' then
    for _, l in ipairs(s) do
      out[#out + 1] = fmt(l.exp)
      out[#out + 1] = fmt(l.cost)
      out[#out + 1] = l.id
    end
  else
    for _, f in ipairs(NAMES[name]) do out[#out + 1] = fmt(s[f]) end
  end
  return out
end
local s = {}
if name == 'sliding-log' then
  for i = 3, #ARGV do s[#s + 1] = tonumber(ARGV[i]) end
elseif name == 'concurrency' then
  for i = 3, #ARGV, 3 do s[#s + 1] = { exp = tonumber(ARGV[i]), cost = tonumber(ARGV[i + 1]), id = ARGV[i + 2] } end
else
  for i, f in ipairs(NAMES[name]) do s[f] = tonumber(ARGV[2 + i]) end
end
return a.encode(s)
`;

const FIELDS: Record<string, readonly string[]> = {
  'fixed-window': ['w', 'c'],
  'sliding-window': ['w', 'c', 'p'],
  'token-bucket': ['u', 't'],
  'leaky-bucket': ['l', 't'],
  gcra: ['t', 'f'],
};

/** Integers at every magnitude: small, near the 32-bit edges, near 2^49 and 2^53, negative ones too. */
const anyInt = fc.oneof(
  fc.integer({ min: 0, max: 1000 }),
  fc.maxSafeInteger(),
  fc.constantFrom(0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 49, 2 ** 52 + 1, 2 ** 53 - 1, -(2 ** 53 - 1), 1_700_000_000_123),
  fc.integer({ min: 2 ** 40, max: 2 ** 53 - 1 }),
);

function stateArb(algorithm: AlgorithmName): fc.Arbitrary<unknown> {
  if (algorithm === 'sliding-log') return fc.array(fc.tuple(anyInt, anyInt), { minLength: 1, maxLength: 80 }).map((pairs) => pairs.flat());
  if (algorithm === 'concurrency') {
    return fc.array(fc.record({ exp: anyInt, cost: anyInt, id: fc.oneof(fc.constant(''), fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('lease-0', 'AbCd:17', 'ключ{ü}')) }), {
      minLength: 1,
      maxLength: 12,
    });
  }
  const names = FIELDS[algorithm] as readonly string[];
  return fc.tuple(...names.map(() => anyInt)).map((values) => Object.fromEntries(names.map((n, i) => [n, values[i]])));
}

/** The decoded numbers and ids, as the harness lists them. */
function flat(algorithm: AlgorithmName, state: unknown): string[] {
  if (algorithm === 'sliding-log') return (state as number[]).map(String);
  if (algorithm === 'concurrency') return (state as Array<{ exp: number; cost: number; id: string }>).flatMap((l) => [String(l.exp), String(l.cost), l.id]);
  return (FIELDS[algorithm] as readonly string[]).map((f) => String((state as Record<string, number>)[f]));
}

async function harness(...args: Array<string | Buffer>): Promise<Buffer | Buffer[]> {
  return (await io().callBuffer('EVAL', HARNESS, 0, ...args)) as Buffer | Buffer[];
}

const ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency'];

describe('state format 2: the TypeScript codec and the Lua twins pack the same bytes', () => {
  it(`runs on the server RC_REDIS_IMPL names (${SERVER_IMPL})`, async () => {
    const info = await io().info('server');
    if (SERVER_IMPL === 'valkey') expect(info).toMatch(/^valkey_version:8\./m);
    else expect(info).not.toMatch(/valkey_version/);
  });

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: TS encode -> Lua decode -> Lua encode gives the same numbers and bytes; Lua encode -> TS decode gives the state back (property, up to 2^53)`, async () => {
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(stateArb(algorithm), async (state) => {
          runs++;
          const bytes = Buffer.from(encodeState(algorithm, state));
          expect(decodeState(algorithm, bytes)).toEqual(state);
          const [again, ...fields] = (await harness(algorithm, 'decode', bytes)) as Buffer[];
          expect(fields.map((f) => f.toString('utf8'))).toEqual(flat(algorithm, state));
          expect(again?.equals(bytes)).toBe(true);
          const packed = (await harness(algorithm, 'encode', ...flat(algorithm, state))) as Buffer;
          expect(packed.equals(bytes)).toBe(true);
          expect(decodeState(algorithm, packed)).toEqual(state);
        }),
        fcBudget({ runs: 150, ms: 1500 }),
      );
      expect(runs).toBeGreaterThan(20);
    });
  }

  it(`sliding-log at its memory budget (${SLIDING_LOG_MAX_ENTRIES} entries) round-trips through Lua's chunked pack and unpack`, async () => {
    const log: number[] = [];
    for (let i = 0; i < SLIDING_LOG_MAX_ENTRIES; i++) log.push(1_700_000_000_000 + i * 3, 1 + (i % 7));
    const bytes = Buffer.from(encodeState('sliding-log', log));
    expect(bytes.length).toBe(SLIDING_LOG_MAX_ENTRIES * 16);
    const key = `sf:${randomBytes(4).toString('hex')}`;
    await io().set(key, bytes);
    // Decoded and packed again in Lua (chunks of 16 doubles beyond 64): the same bytes.
    const again = (await io().callBuffer('EVAL', `${HARNESS.slice(0, HARNESS.indexOf('local NAMES'))}\nlocal a = algo('sliding-log')\nlocal s = a.decode(redis.call('GET', KEYS[1]))\nreturn { #s, a.encode(s) }`, 1, key)) as [number, Buffer];
    expect(again[0]).toBe(SLIDING_LOG_MAX_ENTRIES * 2);
    expect(again[1].equals(bytes)).toBe(true);
    await io().del(key);
  });

  it('a value of the wrong size is refused on both sides, never read as no state', async () => {
    const cases: ReadonlyArray<readonly [AlgorithmName, Buffer]> = [
      ['fixed-window', Buffer.from('1700000000000 3')],
      ['sliding-window', Buffer.alloc(16)],
      ['sliding-log', Buffer.alloc(24)],
      ['token-bucket', Buffer.alloc(24)],
      ['leaky-bucket', Buffer.alloc(8)],
      ['gcra', Buffer.from('17 0')],
      ['concurrency', Buffer.alloc(19)],
      ['concurrency', Buffer.concat([Buffer.from(encodeState('concurrency', [{ exp: 1, cost: 1, id: 'abc' }])).subarray(0, 22)])],
    ];
    for (const [algorithm, raw] of cases) {
      expect(() => decodeState(algorithm, raw), algorithm).toThrow(/not a .* state of format 2/);
      await expect(harness(algorithm, 'decode', raw), algorithm).rejects.toThrow(/ratecontract: stored .* state has \d+ bytes|data string too short/);
    }
  });

  it('the chain script meets a format-1 text value under a format-2 key: the check fails (its fail mode applies), it is not admitted as if the key were empty', async () => {
    const limit = compileLimit({ name: 'sf', purpose: 'abuse', algorithm: 'fixed-window', limit: 3, window: 60_000 }, 'limits[0]', new Set());
    const store = redisStore({ client: io(), prefix: `sf:${randomBytes(4).toString('hex')}:`, timeMode: 'client', ttlGraceMs: 60_000, batch: false });
    const now = 1_700_000_000_000;
    await io().set(store.keyFor(limit.id, 'k'), `${Math.floor(now / 60_000) * 60_000} 3`, 'PX', 60_000);
    await expect(store.evaluate([{ spec: limit, key: 'k', cost: 1, leaseId: undefined }], now)).rejects.toThrow(/stored fixed-window state has 15 bytes/);
  });
});

describe('state format 2 for a sliding window of precision k: its own key, its own size', () => {
  const SUB = `${HARNESS.slice(0, HARNESS.indexOf('local NAMES'))}
local a = algo(ARGV[1])
if ARGV[2] == 'decode' then
  local s = a.decode(ARGV[3])
  local out = { a.encode(s), fmt(s.w) }
  for i = 1, #s.n do out[#out + 1] = fmt(s.n[i]) end
  return out
end
local s = { w = tonumber(ARGV[3]), n = {} }
for i = 4, #ARGV do s.n[#s.n + 1] = tonumber(ARGV[i]) end
return a.encode(s)`;

  it('TS encode -> Lua decode -> Lua encode, and back, give the same numbers and bytes (property, precisions 2 to 60)', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 60 }).chain((k) => fc.record({ k: fc.constant(k), w: anyInt, n: fc.array(anyInt, { minLength: k + 1, maxLength: k + 1 }) })),
        async ({ k, w, n }) => {
          runs++;
          const state = { w, n };
          const bytes = Buffer.from(encodeState('sliding-window', state));
          expect(bytes.length).toBe((k + 2) * 8);
          expect(decodeState('sliding-window', bytes)).toEqual(state);
          const [again, ...fields] = (await io().callBuffer('EVAL', SUB, 0, `sliding-window/${k}`, 'decode', bytes)) as Buffer[];
          expect(fields.map((f) => f.toString('utf8'))).toEqual([w, ...n].map(String));
          expect(again?.equals(bytes)).toBe(true);
          const packed = (await io().callBuffer('EVAL', SUB, 0, `sliding-window/${k}`, 'encode', String(w), ...n.map(String))) as Buffer;
          expect(packed.equals(bytes)).toBe(true);
        },
      ),
      fcBudget({ runs: 100, ms: 1500 }),
    );
    expect(runs).toBeGreaterThan(20);
  });

  it('a precision-4 limit keeps its states under a key of its own, and a two-counter twin (what a release without precision runs) refuses such a value instead of misreading it', async () => {
    const def = { name: 'sf', purpose: 'abuse' as const, algorithm: 'sliding-window' as const, limit: 3, window: 60_000 };
    const four = compileLimit({ ...def, precision: 4 }, 'limits[0]', new Set());
    const one = compileLimit(def, 'limits[0]', new Set());
    const store = redisStore({ client: io(), prefix: `sf:${randomBytes(4).toString('hex')}:`, timeMode: 'client', ttlGraceMs: 60_000, batch: false });
    expect(store.keyFor(four.id, 'k')).not.toBe(store.keyFor(one.id, 'k'));
    expect(store.keyFor(four.id, 'k')).toContain(':sliding-window/4:v2:');
    const now = 1_700_000_000_000;
    await store.evaluate([{ spec: four, key: 'k', cost: 1, leaseId: undefined }], now);
    const raw = await io().getBuffer(store.keyFor(four.id, 'k'));
    expect(raw?.length).toBe(48);
    // Precision 1 never reads that key; were it handed the value, it refuses it.
    expect(await io().getBuffer(store.keyFor(one.id, 'k'))).toBeNull();
    await io().set(store.keyFor(one.id, 'k'), raw as Buffer, 'PX', 60_000);
    await expect(store.evaluate([{ spec: one, key: 'k', cost: 1, leaseId: undefined }], now)).rejects.toThrow(/stored sliding-window state has 48 bytes/);
    // And the other way: a precision-4 twin refuses a two-counter value.
    await io().set(store.keyFor(four.id, 'k'), Buffer.from(encodeState('sliding-window', { w: 0, c: 1, p: 0 })), 'PX', 60_000);
    await expect(store.evaluate([{ spec: four, key: 'k', cost: 1, leaseId: undefined }], now)).rejects.toThrow(/stored sliding-window\/4 state has 24 bytes/);
  });
});
