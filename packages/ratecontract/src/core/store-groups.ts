import type { Clock } from './clock.js';
import { ConfigError } from './errors.js';
import { StoreCircuit } from './store-circuit.js';
import { isSyncStore, type Store, type StoreOp, type StoreOpResult } from './store.js';
import { TierStore } from './tier-store.js';
import type { CompiledLimit } from './types.js';

/** Throws when `store.accepts` refuses one of the limits given to it (`indexes`: their places in `limits`). */
function refuseUnheld(store: Store, name: string, own: readonly CompiledLimit[], indexes: readonly number[]): void {
  if (store.accepts === undefined) return;
  own.forEach((l, j) => {
    const reason = store.accepts?.(l);
    if (reason === undefined) return;
    const at = `limits[${String(indexes[j])}].${l.storeName === undefined ? 'store (the default store)' : 'store'}`;
    throw new ConfigError('RC_UNSUPPORTED_STORE', at, `limit "${l.name}" cannot be held by store "${name}" (${store.kind}): ${reason}`);
  });
}

/** The limits of one store (a failure domain): the store they are sent to, its circuit, and their chain indexes. */
export interface Group {
  readonly store: Store;
  /** The store's name in the limiter: a key of `stores`, or `'(default)'`. */
  readonly name: string;
  readonly indexes: readonly number[];
  readonly circuit: StoreCircuit;
  readonly sync: boolean;
}

/** The name of the group a limit belongs to. */
export const groupName = (limit: CompiledLimit): string => limit.storeName ?? '(default)';

/**
 * Groups a chain's limits by store, in chain order. Limits with a two-tier
 * mode decide through a TierStore in front of their store (allotments,
 * pre-filter); those are returned too, for `close()`.
 */
export function groupStores(
  limits: readonly CompiledLimit[],
  defaultStore: Store,
  stores: Readonly<Record<string, Store>>,
  clock: Clock,
  replicas: number | 'discover',
  currentReplicas: () => number,
): { groups: Group[]; tiers: TierStore[] } {
  const byStore = new Map<string, { store: Store; indexes: number[] }>();
  limits.forEach((l, i) => {
    const name = groupName(l);
    let g = byStore.get(name);
    if (g === undefined) {
      g = { store: l.storeName === undefined ? defaultStore : (stores[l.storeName] as Store), indexes: [] };
      byStore.set(name, g);
    }
    g.indexes.push(i);
  });
  const groups: Group[] = [];
  const tiers: TierStore[] = [];
  for (const [name, { store: shared, indexes }] of byStore) {
    const own = indexes.map((i) => limits[i] as CompiledLimit);
    refuseUnheld(shared, name, own, indexes);
    const store = TierStore.wanted(own) ? new TierStore(shared, own, clock, replicas, currentReplicas, indexes) : shared;
    if (store instanceof TierStore) tiers.push(store);
    groups.push({ store, name, indexes, circuit: new StoreCircuit(store, name), sync: isSyncStore(store) });
  }
  return { groups, tiers };
}

/** The group's ops of a check, in chain order (limits without a key have none). */
export function present(group: Group, ops: ReadonlyArray<StoreOp | undefined>): StoreOp[] {
  const out: StoreOp[] = [];
  for (const i of group.indexes) {
    const op = ops[i];
    if (op !== undefined) out.push(op);
  }
  return out;
}

/** Puts a group's results (in `present` order) at their limits' places in `results`. */
export function fill(group: Group, ops: ReadonlyArray<StoreOp | undefined>, res: readonly StoreOpResult[], results: Array<StoreOpResult | undefined>): void {
  let j = 0;
  for (const i of group.indexes) {
    if (ops[i] !== undefined) results[i] = res[j++];
  }
}
