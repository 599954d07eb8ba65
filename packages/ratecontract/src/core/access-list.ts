import { BlockList, isIP } from 'node:net';
import { ConfigError } from './errors.js';
import { listErrorChannel } from './events.js';
import type { RequestContext } from './types.js';

/**
 * One entry of an `allow` or `deny` list: an address or CIDR (`'10.0.0.0/8'`,
 * `'2001:db8::/32'`, `'192.0.2.7'`, matched against `ctx.ip`), a principal
 * (`{ principal: 'acct-1' }`, matched against `ctx.principal`), or a function
 * of the context (a match when it returns `true`; a throw is no match,
 * reported on `ratecontract:list-error`).
 */
export type AccessEntry<Ctx = RequestContext> = string | { readonly principal: string } | AccessPredicate<Ctx>;

/** A function entry. Method-typed so a `Limiter<MyCtx>` still passes where a `Limiter` is expected (as `check` does). */
export type AccessPredicate<Ctx = RequestContext> = { match(ctx: Ctx): boolean }['match'];

/** Counts entries across every list of one limiter, so a limiter with none pays nothing per check. */
export interface ListCounter {
  entries: number;
}

type Parsed = { readonly kind: 'net'; readonly address: string; readonly prefix: number; readonly family: 'ipv4' | 'ipv6' } | { readonly kind: 'principal'; readonly principal: string } | { readonly kind: 'fn'; readonly fn: (ctx: RequestContext) => boolean };

function parseEntry(entry: unknown, at: string): Parsed {
  if (typeof entry === 'function') return { kind: 'fn', fn: entry as (ctx: RequestContext) => boolean };
  if (typeof entry === 'string') {
    const slash = entry.indexOf('/');
    const address = slash < 0 ? entry : entry.slice(0, slash);
    const v = isIP(address);
    if (v === 0) throw new ConfigError('RC_INVALID_OPTION', at, `not an IPv4 or IPv6 address or CIDR: ${JSON.stringify(entry)}`);
    const max = v === 4 ? 32 : 128;
    const prefixText = slash < 0 ? String(max) : entry.slice(slash + 1);
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) {
      throw new ConfigError('RC_INVALID_OPTION', at, `invalid prefix length in ${JSON.stringify(entry)} (0 to ${max})`);
    }
    return { kind: 'net', address, prefix: Number(prefixText), family: v === 4 ? 'ipv4' : 'ipv6' };
  }
  if (entry !== null && typeof entry === 'object') {
    const p = (entry as { principal?: unknown }).principal;
    if (Object.keys(entry).length === 1 && typeof p === 'string' && p !== '') return { kind: 'principal', principal: p };
  }
  throw new ConfigError('RC_INVALID_OPTION', at, `a list entry is an address or CIDR string, { principal: 'id' }, or a function of the context; got ${entry === null ? 'null' : typeof entry}`);
}

/** The address to look up for `ctx.ip`: the address itself, the network's base address for a prefix key (`2001:db8:1:2::/64`), IPv4-mapped IPv6 as IPv4. */
function lookupAddress(ip: string): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  const slash = ip.indexOf('/');
  let address = slash < 0 ? ip : ip.slice(0, slash);
  if (address.toLowerCase().startsWith('::ffff:') && isIP(address.slice(7)) === 4) address = address.slice(7);
  const v = isIP(address);
  return v === 0 ? undefined : { address, family: v === 4 ? 'ipv4' : 'ipv6' };
}

/**
 * An allow or deny list that can change at run time (`add`, `remove`,
 * `clear`): the limiter reads it at every check, so a change applies to the
 * next check without recreating the limiter. Addresses and CIDRs are matched
 * with node:net `BlockList`.
 */
export class AccessList<Ctx = RequestContext> {
  /** `'deny'` or `'allow'`, and the limit it belongs to (`undefined`: the whole limiter). */
  readonly kind: 'allow' | 'deny';
  readonly limit: string | undefined;
  readonly #counter: ListCounter;
  readonly #entries: Array<{ readonly entry: AccessEntry<Ctx>; readonly parsed: Parsed }> = [];
  #nets = new BlockList();
  #netCount = 0;
  readonly #principals = new Map<string, number>();
  readonly #fns: Array<(ctx: RequestContext) => boolean> = [];

  constructor(kind: 'allow' | 'deny', limit: string | undefined, counter: ListCounter, entries: unknown, at: string) {
    this.kind = kind;
    this.limit = limit;
    this.#counter = counter;
    if (entries === undefined) return;
    if (!Array.isArray(entries)) throw new ConfigError('RC_INVALID_OPTION', at, 'must be an array of addresses or CIDRs, { principal } entries, or functions');
    entries.forEach((e: unknown, i) => this.#add(e as AccessEntry<Ctx>, `${at}[${i}]`));
  }

  /** How many entries the list holds. */
  get size(): number {
    return this.#entries.length;
  }

  /** The entries, as given. */
  entries(): AccessEntry<Ctx>[] {
    return this.#entries.map((e) => e.entry);
  }

  /** Adds entries (validated like the options: `ConfigError` on an invalid one, and then none is added). */
  add(...entries: AccessEntry<Ctx>[]): this {
    entries.forEach((e, i) => parseEntry(e, `${this.#path()}.add[${i}]`));
    for (const e of entries) this.#add(e, this.#path());
    return this;
  }

  /** Removes entries equal to those given (the same string, principal, or function); returns how many were removed. */
  remove(...entries: AccessEntry<Ctx>[]): number {
    let removed = 0;
    for (const e of entries) {
      const i = this.#entries.findIndex((x) => same(x.entry, e));
      if (i < 0) continue;
      this.#entries.splice(i, 1);
      removed++;
    }
    if (removed > 0) this.#rebuild();
    return removed;
  }

  /** Empties the list. */
  clear(): void {
    this.#entries.length = 0;
    this.#rebuild();
  }

  /** Whether the request matches an entry. A throwing function is no match (reported on `ratecontract:list-error`). */
  matches(ctx: RequestContext): boolean {
    if (this.#entries.length === 0) return false;
    if (this.#netCount > 0 && typeof ctx.ip === 'string') {
      const a = lookupAddress(ctx.ip);
      if (a !== undefined && this.#nets.check(a.address, a.family)) return true;
    }
    if (this.#principals.size > 0 && typeof ctx.principal === 'string' && this.#principals.has(ctx.principal)) return true;
    for (const fn of this.#fns) {
      try {
        if (fn(ctx) === true) return true;
      } catch (error) {
        if (listErrorChannel.hasSubscribers) listErrorChannel.publish({ list: this.kind, limitName: this.limit, error });
      }
    }
    return false;
  }

  #path(): string {
    return this.limit === undefined ? `lists.${this.kind}` : `lists.of(${JSON.stringify(this.limit)}).${this.kind}`;
  }

  #add(entry: AccessEntry<Ctx>, at: string): void {
    const parsed = parseEntry(entry, at);
    this.#entries.push({ entry, parsed });
    this.#index(parsed);
    this.#counter.entries++;
  }

  #index(p: Parsed): void {
    if (p.kind === 'net') {
      this.#nets.addSubnet(p.address, p.prefix, p.family);
      this.#netCount++;
    } else if (p.kind === 'principal') {
      this.#principals.set(p.principal, (this.#principals.get(p.principal) ?? 0) + 1);
    } else {
      this.#fns.push(p.fn);
    }
  }

  /** BlockList cannot remove a rule: rebuild every index from the entries. */
  #rebuild(): void {
    const before = this.#netCount + [...this.#principals.values()].reduce((a, b) => a + b, 0) + this.#fns.length;
    this.#nets = new BlockList();
    this.#netCount = 0;
    this.#principals.clear();
    this.#fns.length = 0;
    for (const e of this.#entries) this.#index(e.parsed);
    this.#counter.entries += this.#entries.length - before;
  }
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') return (a as { principal?: unknown }).principal === (b as { principal?: unknown }).principal;
  return false;
}

/** A limiter's lists: its own `allow` and `deny`, and each limit's (`of(name)`). */
export interface LimiterLists<Ctx = RequestContext> {
  readonly allow: AccessList<Ctx>;
  readonly deny: AccessList<Ctx>;
  /** The lists of the limit named `name`; throws `UsageError`-like `ConfigError` for an unknown name. */
  of(name: string): { readonly allow: AccessList<Ctx>; readonly deny: AccessList<Ctx> };
}
