import type { AuditReport, AuditRow } from './audit.js';

/** One change between two contracts. `weakens`: an attacker or a client gets more than before. */
export interface ContractChange {
  /** `added`, `removed`, or the clause that changed. */
  readonly kind: 'added' | 'removed' | 'purpose' | 'key' | 'numbers' | 'fail-mode' | 'store' | 'status' | 'shadow' | 'routes' | 'replicas' | 'route-added' | 'route-removed' | 'route-chain';
  /** A limit name, `routes: <match>`, or `replicas`. */
  readonly subject: string;
  readonly before: string | null;
  readonly after: string | null;
  readonly weakens: boolean;
  readonly message: string;
}

const FAIL_STRENGTH = { open: 0, degraded: 1, closed: 2 } as const;

function numbers(r: AuditRow): string {
  return `${r.algorithm} ${r.bound}; ${r.maxPerDay === null ? 'no daily bound' : `${r.maxPerDay} per day`}`;
}

function limitChanges(a: AuditRow, b: AuditRow): ContractChange[] {
  const out: ContractChange[] = [];
  const push = (kind: ContractChange['kind'], before: string, after: string, weakens: boolean, why: string): void => {
    out.push({ kind, subject: b.name, before, after, weakens, message: `${b.name}: ${kind} ${before} -> ${after}${why === '' ? '' : ` (${why})`}` });
  };
  if (a.purpose !== b.purpose) push('purpose', a.purpose, b.purpose, a.purpose === 'abuse', a.purpose === 'abuse' ? 'no longer a security control' : '');
  if (a.key !== b.key) push('key', a.key, b.key, b.clientSupplied && !a.clientSupplied, b.clientSupplied && !a.clientSupplied ? 'now a value the client chooses' : '');
  const numbersChanged = numbers(a) !== numbers(b) || a.cost !== b.cost;
  if (numbersChanged) {
    const higherDay = a.maxPerDay !== null && (b.maxPerDay === null || b.maxPerDay > a.maxPerDay);
    const higherWindow = b.maxPerWindow / b.windowMs > a.maxPerWindow / a.windowMs || b.burst > a.burst;
    const weakens = higherDay || higherWindow || b.cost < a.cost;
    push('numbers', numbers(a), numbers(b), weakens, higherDay ? 'a higher per-day maximum' : higherWindow ? 'a higher burst or rate' : b.cost < a.cost ? 'a lower cost per request' : '');
  }
  if (a.onError !== b.onError) {
    const weakens = FAIL_STRENGTH[b.onError] < FAIL_STRENGTH[a.onError];
    push('fail-mode', a.onError, b.onError, weakens, weakens ? `fails ${b.onError === 'open' ? 'open' : 'softer'} when the store is down` : '');
  } else if ((!numbersChanged && a.outageMaxPerWindow !== b.outageMaxPerWindow) || a.failClosedAfterMs !== b.failClosedAfterMs) {
    // Outage numbers that moved only because N did are already in the numbers change.
    const weakens = (b.outageMaxPerWindow ?? Infinity) > (a.outageMaxPerWindow ?? Infinity) || b.failClosedAfterMs > a.failClosedAfterMs;
    push('fail-mode', a.failMode, b.failMode, weakens, weakens ? 'more admitted during an outage' : '');
  }
  if (a.store !== b.store || a.failureDomain !== b.failureDomain) {
    const weakens = a.storeType === 'redis' && b.storeType === 'memory';
    push('store', `${a.store} (${a.failureDomain})`, `${b.store} (${b.failureDomain})`, weakens, weakens ? 'state now per process: k replicas admit k times as much' : '');
  }
  if (a.status !== b.status) push('status', String(a.status), String(b.status), false, '');
  if (a.shadow !== b.shadow) push('shadow', String(a.shadow), String(b.shadow), b.shadow, b.shadow ? 'no longer enforced' : '');
  const lost = a.routes.filter((r) => !b.routes.includes(r));
  if (lost.length > 0 || b.routes.some((r) => !a.routes.includes(r))) {
    push('routes', a.routes.join(', ') || '(none)', b.routes.join(', ') || '(none)', lost.length > 0, lost.length > 0 ? `no longer guards ${lost.join(', ')}` : '');
  }
  return out;
}

/**
 * What changed from `before` to `after`: limits added or removed; purpose,
 * key, numbers, fail mode, store, status, shadow and routes of the limits in
 * both; routes added, removed or re-chained; the replica count. Each change
 * says whether it weakens the contract.
 */
export function diffContracts(before: AuditReport, after: AuditReport, routesBefore: ReadonlyMap<string, readonly string[]>, routesAfter: ReadonlyMap<string, readonly string[]>): ContractChange[] {
  const out: ContractChange[] = [];
  const old = new Map(before.rows.map((r) => [r.name, r]));
  const now = new Map(after.rows.map((r) => [r.name, r]));
  for (const [name, r] of old) {
    if (!now.has(name)) out.push({ kind: 'removed', subject: name, before: numbers(r), after: null, weakens: true, message: `${name}: removed (${r.purpose}, ${r.key}, ${numbers(r)})` });
  }
  for (const [name, r] of now) {
    const was = old.get(name);
    if (was === undefined) out.push({ kind: 'added', subject: name, before: null, after: numbers(r), weakens: false, message: `${name}: added (${r.purpose}, ${r.key}, ${numbers(r)})` });
    else out.push(...limitChanges(was, r));
  }
  for (const [match, chain] of routesBefore) {
    const next = routesAfter.get(match);
    const subject = `routes: ${match}`;
    if (next === undefined) out.push({ kind: 'route-removed', subject, before: chain.join(', '), after: null, weakens: chain.length > 0, message: `${subject}: removed; its requests now take another route or none` });
    else if (next.join(',') !== chain.join(',')) {
      const dropped = chain.filter((n) => !next.includes(n));
      out.push({
        kind: 'route-chain',
        subject,
        before: `[${chain.join(', ')}]`,
        after: `[${next.join(', ')}]`,
        weakens: dropped.length > 0,
        message: `${subject}: [${chain.join(', ')}] -> [${next.join(', ')}]${dropped.length > 0 ? ` (drops ${dropped.join(', ')})` : ''}`,
      });
    }
  }
  for (const [match, chain] of routesAfter) {
    if (!routesBefore.has(match)) out.push({ kind: 'route-added', subject: `routes: ${match}`, before: null, after: `[${chain.join(', ')}]`, weakens: false, message: `routes: ${match}: added [${chain.join(', ')}]` });
  }
  if (before.replicas !== after.replicas) {
    const a = before.replicas;
    const b = after.replicas;
    const weakens = typeof a === 'number' && typeof b === 'number' && b > a;
    out.push({ kind: 'replicas', subject: 'replicas', before: String(a), after: String(b), weakens, message: `replicas: ${String(a)} -> ${String(b)}${weakens ? ' (closed limits admit k x N during an outage: more replicas admit more)' : ''}` });
  }
  return out;
}
