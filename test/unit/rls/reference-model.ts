/**
 * A reference for what the rate limit service answers, written from
 * docs/rls.md and the reference's semantics rather than from the service's
 * code: each rule of the file is N per unit on its algorithm (the fixed
 * window unless stated, burst N unless stated), decided by the library's
 * pure algorithm functions on a state per rule and descriptor key, where a
 * rejected call consumes nothing. It reads each rule's clauses from the file
 * as written (not from the translation under test); only the matching, which
 * has its own properties (test/integration/rls/config.test.ts), is shared.
 */
import { algorithms, type AlgorithmName, type AlgorithmParams } from '../../../packages/ratecontract/src/index.js';
import type { RlsConfig, RlsRule } from '../../../packages/cli/src/rls/config.js';
import { matchRequest } from '../../../packages/cli/src/rls/descriptor-match.js';
import { descriptorKey } from '../../../packages/cli/src/rls/engine.js';
import type { TrafficStep } from './rls-arbitraries.js';

const UNIT_MS: Readonly<Record<string, number>> = { second: 1_000, minute: 60_000, hour: 3_600_000, day: 86_400_000 };
const MAX_UINT32 = 0xffff_ffff;

type Doc = { descriptors?: unknown[] };
type Raw = { algorithm?: string; burst?: number; name?: string };

/** The `rate_limit` map at `at` (`descriptors[0].descriptors[1].rate_limit`) of the file as written. */
function rawAt(doc: Doc, at: string): Raw {
  let v: unknown = doc;
  for (const m of at.matchAll(/([a-z_]+)(?:\[(\d+)\])?/g)) {
    v = (v as Record<string, unknown>)[m[1] as string];
    if (m[2] !== undefined) v = (v as unknown[])[Number(m[2])];
  }
  return v as Raw;
}

/** One `DescriptorStatus`, as the engine reports it. */
export interface ModelStatus {
  readonly code: 'OK' | 'OVER_LIMIT';
  readonly currentLimit: { readonly requestsPerUnit: number; readonly unit: string; readonly name: string | undefined } | undefined;
  readonly limitRemaining: number;
  readonly durationUntilResetMs: number | undefined;
  readonly result: string;
}

/** The reference service over one file: call `decide` in time order. */
export class ReferenceModel {
  readonly #states = new Map<string, unknown>();

  constructor(
    private readonly config: RlsConfig,
    private readonly doc: Doc,
  ) {}

  /** The statuses of one request at `now`, or the gRPC error the reference answers with. */
  decide(step: TrafficStep, now: number): { overallCode: string; statuses: ModelStatus[] } | { thrown: string } {
    const known = this.config.domains.has(step.domain);
    const planned: Array<{ rule: RlsRule | undefined; raw: Raw | undefined; rpu: number; unit: string; key: string; state: string; cost: number; shadow: boolean } | ModelStatus> = [];
    const replacing = new Set<string>();
    for (const [i, d] of step.descriptors.entries()) {
      const match = known ? matchRequest(this.config, step.domain, d.entries) : undefined;
      const cost = Math.max(1, d.hitsAddend ?? Math.max(1, step.hitsAddend));
      const key = descriptorKey(step.domain, d.entries, match?.shared);
      if (known && d.limit !== undefined) {
        if (d.limit.unit === undefined) return { thrown: `descriptors[${i}].limit.unit: unknown unit` };
        const rule = match?.rule;
        const raw = rule === undefined ? undefined : rawAt(this.doc, rule.at);
        planned.push({ rule: undefined, raw, rpu: d.limit.requestsPerUnit, unit: d.limit.unit, key, state: `override ${rule?.at ?? step.domain} ${d.limit.requestsPerUnit} ${d.limit.unit}|${key}`, cost, shadow: false });
        continue;
      }
      if (match === undefined) {
        planned.push({ code: 'OK', currentLimit: undefined, limitRemaining: 0, durationUntilResetMs: undefined, result: 'no-rule' });
        continue;
      }
      const rule = match.rule;
      for (const r of rule.replaces) replacing.add(r);
      if (rule.unlimited) {
        planned.push({ code: 'OK', currentLimit: undefined, limitRemaining: MAX_UINT32, durationUntilResetMs: undefined, result: 'unlimited' });
        continue;
      }
      const raw = rawAt(this.doc, rule.at);
      planned.push({ rule, raw, rpu: rule.requestsPerUnit, unit: rule.unit as string, key, state: `${rule.at}|${key}`, cost, shadow: rule.shadow });
    }
    const statuses = planned.map((p): ModelStatus => {
      if ('code' in p) return p;
      const name = p.rule?.name;
      if (p.rule !== undefined && name !== undefined && replacing.has(name)) return { code: 'OK', currentLimit: undefined, limitRemaining: 0, durationUntilResetMs: undefined, result: 'no-rule' };
      const w = UNIT_MS[p.unit.toLowerCase()] as number;
      const currentLimit = { requestsPerUnit: p.rpu, unit: p.unit.toUpperCase(), name };
      if (p.rpu === 0) {
        return p.shadow
          ? { code: 'OK', currentLimit, limitRemaining: 0, durationUntilResetMs: w - (now % w), result: 'shadow' }
          : { code: 'OVER_LIMIT', currentLimit, limitRemaining: 0, durationUntilResetMs: w - (now % w), result: 'blocked' };
      }
      const algorithm = (p.raw?.algorithm ?? 'fixed-window') as AlgorithmName;
      const params: AlgorithmParams = { limit: p.rpu, windowMs: w, burst: p.raw?.burst ?? p.rpu, queue: false };
      const r = algorithms[algorithm].decide(this.#states.get(p.state), now, p.cost, params);
      const remaining = Math.max(0, Math.min(MAX_UINT32, Math.floor(r.remaining)));
      if (r.allowed) {
        this.#states.set(p.state, r.state);
        return { code: 'OK', currentLimit, limitRemaining: remaining, durationUntilResetMs: r.resetMs, result: 'within' };
      }
      const wait = Number.isFinite(r.retryAfterMs) ? r.retryAfterMs : r.resetMs;
      return p.shadow
        ? { code: 'OK', currentLimit, limitRemaining: remaining, durationUntilResetMs: wait, result: 'shadow' }
        : { code: 'OVER_LIMIT', currentLimit, limitRemaining: remaining, durationUntilResetMs: wait, result: 'over' };
    });
    return { overallCode: statuses.some((s) => s.code === 'OVER_LIMIT') ? 'OVER_LIMIT' : 'OK', statuses };
  }
}
