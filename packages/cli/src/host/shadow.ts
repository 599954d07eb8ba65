import type { ShadowReport } from 'ratecontract';
import type { NamedLimiter } from './host.js';

/** One shadowed limit of one limiter in force, as `/shadow.json` lists it. */
export interface ShadowEntry extends ShadowReport {
  /** The name the live page shows the limiter under (a route, a rule). */
  readonly limiter: string;
}

/** `/shadow.json`: the clock of the answer, and the report of every shadowed limit of every limiter in force (docs/metrics.md, "Shadow report"). */
export interface ShadowSnapshot {
  readonly now: number;
  readonly limits: readonly ShadowEntry[];
}

/** The shadow reports of the limiters in force, each limiter once even when it is in force under several names. */
export function shadowSnapshot(limiters: Iterable<NamedLimiter>, now = Date.now()): ShadowSnapshot {
  const seen = new Set<unknown>();
  const limits: ShadowEntry[] = [];
  for (const n of limiters) {
    if (seen.has(n.limiter)) continue;
    seen.add(n.limiter);
    for (const r of n.limiter.shadowReport()) limits.push({ limiter: n.name, ...r });
  }
  return { now, limits };
}
