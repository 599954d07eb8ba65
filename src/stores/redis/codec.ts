import type { AlgorithmName } from '../../algorithms/types.js';
import type { ConcurrencyState, Lease } from '../../algorithms/concurrency.js';
import { RateContractError } from '../../core/errors.js';
import type { StoreOp, StoreOpResult } from '../../core/store.js';

/** Reply integers per op of chain.lua. */
export const CHAIN_REPLY_PER_OP = 8;

/** An op's figures as chain.lua reports them, plus what a Cluster caller needs to compensate. */
export interface ChainOpReply extends StoreOpResult {
  /** remaining / resetMs of a cost-0 peek on the state before this op consumed (0 unless requested). */
  readonly peekRemaining: number;
  readonly peekResetMs: number;
}

function flags(op: StoreOp): string {
  return String((op.limit.shadow ? 1 : 0) + (op.limit.countRejected ? 2 : 0));
}

function paramArgs(op: StoreOp): string[] {
  const p = op.limit.params;
  return [op.limit.algorithm, String(p.limit), String(p.windowMs), String(p.burst), p.queue ? '1' : '0', String(op.cost)];
}

/** ARGV of chain.lua (see its header). `now` undefined: server time. */
export function chainArgs(ops: readonly StoreOp[], now: number | undefined, graceMs: number, wantPeek: boolean): string[] {
  const args = [now === undefined ? '' : String(now), String(graceMs), wantPeek ? '1' : '0', String(ops.length)];
  for (const op of ops) args.push(...paramArgs(op), flags(op), op.leaseId ?? '');
  return args;
}

/** ARGV of refund.lua (see its header). A `now` of undefined: server time. */
export function refundArgs(ops: readonly StoreOp[], nows: ReadonlyArray<number | undefined>, graceMs: number): string[] {
  const args = [String(graceMs), String(ops.length)];
  ops.forEach((op, i) => {
    const now = nows[i];
    args.push(...paramArgs(op), now === undefined ? '' : String(now), op.leaseId ?? '');
  });
  return args;
}

/** ARGV of release.lua (see its header). */
export function releaseArgs(op: StoreOp, now: number | undefined, graceMs: number): string[] {
  return [now === undefined ? '' : String(now), String(graceMs), String(op.limit.params.windowMs), op.leaseId ?? ''];
}

function malformed(what: string): RateContractError {
  return new RateContractError('RC_STORE_FAILURE', `redis store: malformed ${what} reply`);
}

function int(v: unknown, what: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  // Some clients / RESP versions hand integers over as strings or bigints.
  if (typeof v === 'string' || typeof v === 'bigint') {
    const n = Number(v);
    if (Number.isSafeInteger(n)) return n;
  }
  throw malformed(what);
}

/** Decodes chain.lua's reply: the `now` it decided at and one result per op. */
export function decodeChainReply(reply: unknown, n: number): { now: number; results: ChainOpReply[] } {
  if (!Array.isArray(reply) || reply.length !== 1 + n * CHAIN_REPLY_PER_OP) throw malformed('chain');
  const r = reply as unknown[];
  const now = int(r[0], 'chain');
  const results = new Array<ChainOpReply>(n);
  for (let i = 0; i < n; i++) {
    const b = 1 + i * CHAIN_REPLY_PER_OP;
    const retry = int(r[b + 4], 'chain');
    results[i] = {
      allowed: int(r[b], 'chain') === 1,
      consumed: int(r[b + 1], 'chain') === 1,
      remaining: int(r[b + 2], 'chain'),
      resetMs: int(r[b + 3], 'chain'),
      retryAfterMs: retry === -1 ? Infinity : retry,
      delayMs: int(r[b + 5], 'chain'),
      peekRemaining: int(r[b + 6], 'chain'),
      peekResetMs: int(r[b + 7], 'chain'),
    };
  }
  return { now, results };
}

function nums(raw: string): number[] {
  return (raw.match(/-?\d+/g) ?? []).map(Number);
}

function leases(raw: string): ConcurrencyState | undefined {
  const out: Lease[] = [];
  const re = /^(-?\d+) (\d+) (\d+):/;
  let pos = 0;
  while (pos < raw.length) {
    const m = re.exec(raw.slice(pos));
    if (m === null) break;
    const len = Number(m[3]);
    const start = pos + m[0].length;
    out.push({ exp: Number(m[1]), cost: Number(m[2]), id: raw.slice(start, start + len) });
    pos = start + len;
  }
  return out.length > 0 ? out : undefined;
}

/**
 * Reads a state as the Lua scripts write it, into the TypeScript algorithm's
 * state shape (for tools and tests: `algorithms[a].expiresAt(decodeState(a, raw), p)`).
 * Lease ids are byte strings; ASCII ids round-trip exactly.
 */
export function decodeState(algorithm: AlgorithmName, raw: string): unknown {
  switch (algorithm) {
    case 'fixed-window': {
      const [w = 0, c = 0] = nums(raw);
      return { w, c };
    }
    case 'sliding-window': {
      const [w = 0, c = 0, p = 0] = nums(raw);
      return { w, c, p };
    }
    case 'token-bucket': {
      const [u = 0, t = 0] = nums(raw);
      return { u, t };
    }
    case 'leaky-bucket': {
      const [l = 0, t = 0] = nums(raw);
      return { l, t };
    }
    case 'gcra': {
      const [t = 0, f = 0] = nums(raw);
      return { t, f };
    }
    case 'sliding-log': {
      const v = nums(raw);
      return v.length > 0 ? v : undefined;
    }
    case 'concurrency':
      return leases(raw);
  }
}
