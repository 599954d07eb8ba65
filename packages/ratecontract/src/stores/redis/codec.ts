import { RateContractError } from '../../core/errors.js';
import type { StoreOp, StoreOpResult } from '../../core/store.js';
import type { CompiledLimit } from '../../core/types.js';

/**
 * Reply integers of chain.lua per op (see its header): 2 for an op admitted
 * and consumed without delay (remaining, resetMs), else a negative code and
 * 3 figures or fewer; 2 more per op with the peek figures. A server-time
 * call's reply starts with its `now`.
 */
export const CHAIN_REPLY_ADMITTED = 2;
/** chain.lua's codes: admitted without consuming, rejected, admitted and consumed with a queue delay. */
const UNCONSUMED = -1;
const REJECTED = -2;
const DELAYED = -3;
/** Reply integers per op of peek.lua (after its `now`): outcome, remaining, resetMs, retryAfterMs, delayMs, peekRemaining, peekResetMs. */
export const PEEK_REPLY_PER_OP = 7;

/** An op's figures as chain.lua reports them, plus what a Cluster caller needs to compensate. */
export interface ChainOpReply extends StoreOpResult {
  /** remaining / resetMs of a cost-0 peek on the state before this op consumed (0 unless requested). */
  readonly peekRemaining: number;
  readonly peekResetMs: number;
}

/** One chain of a chain.lua call: its ops and the client `now` (undefined: the server clock). */
export interface ChainCall {
  readonly ops: readonly StoreOp[];
  readonly now: number | undefined;
}

/** A limit's spec in chain.lua's ARGV (algorithm, limit, windowMs, burst, queue, flags, default cost), as strings built once. */
interface LimitArgs {
  readonly spec: readonly string[];
  readonly cost: string;
}

const limitArgs = new WeakMap<CompiledLimit, LimitArgs>();

function argsOf(limit: CompiledLimit): LimitArgs {
  let a = limitArgs.get(limit);
  if (a === undefined) {
    const p = limit.params;
    const flags = String((limit.shadow ? 1 : 0) + (limit.countRejected ? 2 : 0));
    const cost = String(limit.cost);
    // A sliding window of precision k > 1 runs as the twin `sliding-window/k` (see algo() in common.lua).
    const algorithm = p.precision !== undefined && p.precision > 1 ? `${limit.algorithm}/${p.precision}` : limit.algorithm;
    a = { spec: [algorithm, String(p.limit), String(p.windowMs), String(p.burst), queueArg(limit), flags, cost], cost };
    limitArgs.set(limit, a);
  }
  return a;
}

/**
 * The spec's queue value: '1' or '0', then, for a plan whose state other
 * plans share and whose expiry depends on the plan's rate (token and leaky
 * bucket), ';N,B' per sharing plan, so the key lives until none needs it.
 */
function queueArg(limit: CompiledLimit): string {
  const q = limit.params.queue ? '1' : '0';
  const shared = limit.sharedParams;
  if (shared === undefined || (limit.algorithm !== 'token-bucket' && limit.algorithm !== 'leaky-bucket')) return q;
  return q + shared.map((p) => `;${p.limit},${p.burst}`).join('');
}

/** refund.lua's per-op parameters: algorithm, limit, windowMs, burst, queue, cost. */
function paramArgs(op: StoreOp): string[] {
  const { spec, cost } = argsOf(op.spec);
  return [spec[0] as string, spec[1] as string, spec[2] as string, spec[3] as string, spec[4] as string, op.cost === op.spec.cost ? cost : String(op.cost)];
}

/**
 * ARGV of chain.lua for a batch of chains (see its header): the distinct
 * limits once, as specs; then per op one value (the spec's number) or, with
 * a cost other than the limit's or a lease, three.
 */
export function batchArgs(chains: readonly ChainCall[], graceMs: number, wantPeek: boolean): string[] {
  const clientTime = chains.some((c) => c.now !== undefined);
  const specOf = new Map<CompiledLimit, number>();
  const specs: string[] = [];
  const body: string[] = [String(chains.length)];
  for (const c of chains) {
    if (clientTime) body.push(c.now === undefined ? '' : String(c.now));
    body.push(String(c.ops.length));
    for (const op of c.ops) {
      let j = specOf.get(op.spec);
      if (j === undefined) {
        j = specOf.size + 1;
        specOf.set(op.spec, j);
        for (const v of argsOf(op.spec).spec) specs.push(v);
      }
      if (op.cost === op.spec.cost && op.leaseId === undefined) body.push(String(j));
      else body.push(String(-j), String(op.cost), op.leaseId ?? '');
    }
  }
  const args = [String(graceMs), wantPeek ? '1' : '0', clientTime ? 'c' : '', String(specOf.size)];
  for (const v of specs) args.push(v);
  for (const v of body) args.push(v);
  return args;
}

/** ARGV of chain.lua for one chain. `now` undefined: server time. */
export function chainArgs(ops: readonly StoreOp[], now: number | undefined, graceMs: number, wantPeek: boolean): string[] {
  return batchArgs([{ ops, now }], graceMs, wantPeek);
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
  return [now === undefined ? '' : String(now), String(graceMs), String(op.spec.params.windowMs), op.leaseId ?? ''];
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

/** One chain's part of chain.lua's reply: the `now` it was decided at and one result per op. */
export interface ChainReply {
  readonly now: number;
  readonly results: ChainOpReply[];
}

/**
 * Decodes chain.lua's reply for `chains` (their op counts, and each one's
 * client `now`, undefined in server-time mode: the reply then starts with
 * the server's); `withPeek` as the call's ARGV[2].
 */
export function decodeBatchReply(reply: unknown, chains: readonly ChainCall[], withPeek: boolean): ChainReply[] {
  if (!Array.isArray(reply)) throw malformed('chain');
  const r = reply as unknown[];
  const end = r.length;
  const clientTime = chains.some((c) => c.now !== undefined);
  let b = 0;
  const serverNow = clientTime ? 0 : int(r[b++], 'chain');
  const out = new Array<ChainReply>(chains.length);
  for (let j = 0; j < chains.length; j++) {
    const c = chains[j] as ChainCall;
    const n = c.ops.length;
    const results = new Array<ChainOpReply>(n);
    for (let i = 0; i < n; i++) {
      if (b + CHAIN_REPLY_ADMITTED > end) throw malformed('chain');
      const first = int(r[b], 'chain');
      let allowed = true;
      let consumed = true;
      let retryAfterMs = 0;
      let delayMs = 0;
      let remaining: number;
      let resetMs: number;
      if (first >= 0) {
        remaining = first;
        resetMs = int(r[b + 1], 'chain');
        b += 2;
      } else {
        remaining = int(r[b + 1], 'chain');
        resetMs = int(r[b + 2], 'chain');
        if (first === UNCONSUMED) {
          consumed = false;
          b += 3;
        } else if (first === REJECTED) {
          const retry = int(r[b + 3], 'chain');
          allowed = false;
          consumed = false;
          retryAfterMs = retry === -1 ? Infinity : retry;
          b += 4;
        } else if (first === DELAYED) {
          delayMs = int(r[b + 3], 'chain');
          b += 4;
        } else {
          throw malformed('chain');
        }
      }
      let peekRemaining = 0;
      let peekResetMs = 0;
      if (withPeek) {
        peekRemaining = int(r[b], 'chain');
        peekResetMs = int(r[b + 1], 'chain');
        b += 2;
      }
      results[i] = { allowed, consumed, remaining, resetMs, retryAfterMs, delayMs, peekRemaining, peekResetMs };
    }
    out[j] = { now: c.now ?? serverNow, results };
  }
  if (b !== end) throw malformed('chain');
  return out;
}

/** Decodes chain.lua's reply for one chain of `ops` decided at the client `now` (undefined: server time). */
export function decodeChainReply(reply: unknown, ops: readonly StoreOp[], now: number | undefined, withPeek: boolean): ChainReply {
  return decodeBatchReply(reply, [{ ops, now }], withPeek)[0] as ChainReply;
}

/** ARGV of peek.lua (see its header) for one slot group's ops. `now` undefined: server time. */
export function peekArgs(ops: readonly StoreOp[], now: number | undefined): string[] {
  const args = [now === undefined ? '' : String(now), String(ops.length)];
  for (const op of ops) args.push(...paramArgs(op), op.leaseId ?? '');
  return args;
}

/** peek.lua's reply: the `now` decided at, and per op its figures with `consumed` meaning "would consume if the chain admits". */
export function decodePeekReply(reply: unknown, n: number): ChainReply {
  if (!Array.isArray(reply) || reply.length !== 1 + n * PEEK_REPLY_PER_OP) throw malformed('peek');
  const r = reply as unknown[];
  const now = int(r[0], 'peek');
  const results = new Array<ChainOpReply>(n);
  for (let i = 0, b = 1; i < n; i++, b += PEEK_REPLY_PER_OP) {
    const outcome = int(r[b], 'peek');
    if (outcome < 0 || outcome > 2) throw malformed('peek');
    const retry = int(r[b + 3], 'peek');
    results[i] = {
      allowed: outcome > 0,
      consumed: outcome === 2,
      remaining: int(r[b + 1], 'peek'),
      resetMs: int(r[b + 2], 'peek'),
      retryAfterMs: retry === -1 ? Infinity : retry,
      delayMs: int(r[b + 4], 'peek'),
      peekRemaining: int(r[b + 5], 'peek'),
      peekResetMs: int(r[b + 6], 'peek'),
    };
  }
  return { now, results };
}

/**
 * Applies the chain rule to peeked ops (every slot group of one chain): an
 * op consumes iff it would consume and the chain admits (or its limit counts
 * rejected attempts); one that admits without consuming reports the cost-0
 * figures. The same answers chain.lua gives, without the writes.
 */
export function chainOfPeeks(ops: readonly StoreOp[], replies: readonly ChainOpReply[]): StoreOpResult[] {
  const chainAllowed = replies.every((r, i) => r.allowed || (ops[i] as StoreOp).spec.shadow);
  return replies.map((r, i) => {
    if (!r.allowed) return { allowed: false, consumed: false, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.retryAfterMs, delayMs: 0 };
    if (r.consumed && (chainAllowed || (ops[i] as StoreOp).spec.countRejected)) {
      return { allowed: true, consumed: true, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: 0, delayMs: r.delayMs };
    }
    return { allowed: true, consumed: false, remaining: r.consumed ? r.peekRemaining : r.remaining, resetMs: r.consumed ? r.peekResetMs : r.resetMs, retryAfterMs: 0, delayMs: 0 };
  });
}
