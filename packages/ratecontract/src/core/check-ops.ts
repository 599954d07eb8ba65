import { algorithms } from '../algorithms/registry.js';
import { UsageError } from './errors.js';
import { costErrorChannel, keyErrorChannel, planErrorChannel } from './events.js';
import type { StoreOp } from './store.js';
import type { CompiledLimit, RequestContext } from './types.js';

/**
 * What a check runs of a limit's own functions before any store call: its
 * key, its cost and its plan. Each runs once per check; one that throws (or
 * answers nonsense) is reported on its channel and decided on the strict
 * side, never thrown at the caller.
 */

/** The key a check is counted under when the limit's key function threw (one shared key). */
export const KEY_ERROR = '\u0000key-error';

/** Runs a limit's key function once; a throwing one is reported and counted under a shared key. */
export function runKey(limit: CompiledLimit, ctx: RequestContext): string | undefined {
  try {
    return limit.key(ctx);
  } catch (error) {
    if (keyErrorChannel.hasSubscribers) keyErrorChannel.publish({ limitName: limit.name, error });
    return KEY_ERROR;
  }
}

/**
 * Runs a limit's cost function once. One that throws or returns anything
 * but a positive integer is reported and costs the limit's capacity + 1:
 * the strict side (the request is rejected, and can never fit), so a
 * request that breaks the cost function gains nothing.
 */
export function runCost(limit: CompiledLimit, ctx: RequestContext): number {
  let error: unknown;
  try {
    const c = (limit.costOf as (ctx: RequestContext) => number)(ctx);
    if (Number.isSafeInteger(c) && c >= 1) return c;
    error = new TypeError(`cost function of limit "${limit.name}" must return a positive integer, got ${typeof c === 'number' ? String(c) : typeof c}`);
  } catch (thrown) {
    error = thrown;
  }
  const cost = algorithms[limit.algorithm].capacity(limit.params) + 1;
  if (costErrorChannel.hasSubscribers) costErrorChannel.publish({ limitName: limit.name, error, cost });
  return cost;
}

/** The plan of a request under a limit with plans; `undefined` (reported) when it names none the limit defines. */
export function planOf(limit: CompiledLimit, ctx: RequestContext): CompiledLimit | undefined {
  let name: string | undefined;
  let error: unknown;
  try {
    name = (limit.planOf as (ctx: RequestContext) => string | undefined)(ctx);
    const plan = name === undefined ? undefined : limit.plans?.get(name);
    if (plan !== undefined) return plan;
  } catch (thrown) {
    error = thrown;
  }
  if (planErrorChannel.hasSubscribers) {
    error ??= new UsageError('RC_UNKNOWN_PLAN', `limit "${limit.name}": ${name === undefined ? 'the request names no plan' : `unknown plan ${JSON.stringify(name.slice(0, 64))}`}`);
    planErrorChannel.publish({ limitName: limit.name, plan: name, error });
  }
  return undefined;
}

/** A caller's `check(ctx, { cost })`: a positive integer, else `UsageError`. */
export function validCost(cost: number): number {
  if (!Number.isSafeInteger(cost) || cost < 1) throw new UsageError('RC_INVALID_COST', `check(ctx, { cost }): cost must be a positive integer, got ${String(cost)}`);
  return cost;
}

/**
 * Puts the ops of limits whose plan is unknown back into `ops`, marked
 * failed (decided by their fail mode). Returns the failed flags
 * (`failed`, or new ones), or `failed` itself when no plan failed.
 */
export function withPlanFailures(ops: Array<StoreOp | undefined>, planFailed: ReadonlyArray<StoreOp | undefined> | undefined, failed: boolean[] | undefined): boolean[] | undefined {
  if (planFailed === undefined) return failed;
  const out = failed ?? new Array<boolean>(ops.length).fill(false);
  for (let i = 0; i < ops.length; i++) {
    const op = planFailed[i];
    if (op === undefined) continue;
    ops[i] = op;
    out[i] = true;
  }
  return out;
}
