import { StoreError, UsageError } from './errors.js';
import { refuseUnknown } from './options.js';
import { DEFAULT_DEADLINE_MS } from './store-circuit.js';
import type { StoreOp } from './store.js';
import type { Group } from './store-groups.js';
import { unrefTimer } from './timers.js';
import type { CompiledLimit, RequestContext } from './types.js';

/**
 * The operator calls `limiter.peek` and `limiter.reset`: not on a request's
 * path, so unlike `check` they reject when their store cannot answer. This
 * file holds what they do besides the check's own machinery (deadlines,
 * errors, what a reset clears).
 */

/** Shortest deadline of an operator call (`peek`, `reset`): they are not on a request's path. */
const OPERATOR_DEADLINE_MS = 1000;

/** An operator call on one store: within max(its deadline, 1 s), any failure a `StoreError` naming the store. */
export async function operatorCall<T>(group: Group, what: 'peek' | 'reset', run: () => Promise<T>): Promise<T> {
  const deadlineMs = Math.max(group.store.deadlineMs ?? DEFAULT_DEADLINE_MS, OPERATOR_DEADLINE_MS);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreError('RC_STORE_TIMEOUT', group.name, `${what}: store "${group.name}" (${group.store.kind}) did not answer within ${deadlineMs} ms`)), deadlineMs);
    unrefTimer(timer);
  });
  try {
    return await Promise.race([run(), late]);
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw new StoreError('RC_STORE_FAILURE', group.name, `${what}: store "${group.name}" (${group.store.kind}) failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

/** A store without the optional method an operator call needs. */
export function unsupported(what: 'peek' | 'reset', group: Group): UsageError {
  const method = what === 'peek' ? 'peek(ops, now)' : 'clear(ops, now)';
  return new UsageError('RC_UNSUPPORTED_STORE', `${what}: store "${group.name}" (${group.store.kind}) does not implement ${method}, which limiter.${what} needs (docs/stores.md)`);
}

/** `peek` of a request whose plan is unknown: a check would be decided by the fail mode, so there is nothing to show. */
export function unknownPlan(planFailed: ReadonlyArray<StoreOp | undefined>): UsageError {
  const limit = (planFailed.find((op) => op !== undefined) as StoreOp).spec;
  return new UsageError('RC_UNKNOWN_PLAN', `peek: the request names no plan of limit "${limit.name}" (plans: ${[...(limit.plans?.keys() ?? [])].join(', ')}); a check would be decided by its fail mode`);
}

/**
 * What `reset(limitName, ctx, { by })` clears: the limit, the raw key and
 * one cost-0 op per distinct state id among the limit and its plans, under
 * the key's state key (with keySlots, its slot: clearing it clears every
 * key that shares the slot). Throws `UsageError` on an unknown limit, an
 * unknown option or a context that gives no key.
 */
export function resetOps(
  limits: readonly CompiledLimit[],
  stateKeys: ReadonlyArray<(raw: string) => string>,
  limitName: string,
  ctx: RequestContext,
  options: { readonly by?: string | undefined } | undefined,
): { limit: CompiledLimit; raw: string; by: string | undefined; ops: StoreOp[] } {
  const limit = limits.find((l) => l.name === limitName);
  if (limit === undefined) {
    throw new UsageError('RC_UNKNOWN_LIMIT', `reset: no limit named ${JSON.stringify(limitName)}; limits: ${limits.map((l) => l.name).join(', ')}`);
  }
  if (options !== undefined) refuseUnknown(options, ['by'], 'reset');
  const by = options?.by;
  if (by !== undefined && typeof by !== 'string') throw new UsageError('RC_INVALID_OPTION', `reset: by must be a string, got ${typeof by}`);
  let raw: string | undefined;
  try {
    raw = limit.key(ctx);
  } catch (error) {
    throw new UsageError('RC_INVALID_KEY', `reset: the key function of limit "${limit.name}" threw: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (raw === undefined) throw new UsageError('RC_INVALID_KEY', `reset: the context gives no key for limit "${limit.name}" (key ${limit.keySpec})`);
  const key = (stateKeys[limits.indexOf(limit)] as (raw: string) => string)(raw);
  const ids = new Map<string, CompiledLimit>([[limit.id, limit]]);
  for (const p of limit.plans?.values() ?? []) if (!ids.has(p.id)) ids.set(p.id, p);
  const ops: StoreOp[] = [...ids.values()].map((l) => ({ spec: l, key, cost: 0, leaseId: undefined }));
  return { limit, raw, by, ops };
}
