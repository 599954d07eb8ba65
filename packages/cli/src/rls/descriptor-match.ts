import type { RlsConfig, RlsNode, RlsRule } from './config.js';

/** One entry of a request descriptor. */
export interface Entry {
  readonly key: string;
  readonly value: string;
}

/** What a request descriptor matched. */
export interface Match {
  readonly rule: RlsRule;
  /**
   * Per entry, the value the counter is keyed by: the request's value, or a
   * `share_threshold` wildcard's pattern (every value it matches shares one
   * counter). `undefined` when no entry shares.
   */
  readonly shared: ReadonlyArray<string | undefined> | undefined;
}

/** Whether `value` matches a pattern split on `*`: the first part a prefix, the last a suffix, the rest in order between. */
export function wildcardMatch(parts: readonly string[], value: string): boolean {
  if (parts.length === 1) return parts[0] === value;
  const first = parts[0] as string;
  const last = parts[parts.length - 1] as string;
  let fixed = 0;
  for (const p of parts) fixed += p.length;
  if (value.length < fixed || !value.startsWith(first) || !value.endsWith(last)) return false;
  let rest = value.slice(first.length, value.length - last.length);
  for (let i = 1; i < parts.length - 1; i++) {
    const p = parts[i] as string;
    const at = rest.indexOf(p);
    if (at < 0) return false;
    rest = rest.slice(at + p.length);
  }
  return true;
}

/**
 * The rule a request descriptor matches in a domain's tree, with the
 * reference's semantics: at each level `key_value` exactly, else the first
 * wildcard of that level that matches `key_value`, else `key` alone; a rule
 * applies only at the level of the descriptor's last entry (a descriptor of N
 * entries matches a rule at depth N); the walk stops at a level without
 * children. `undefined`: no rule (the descriptor is not limited).
 */
export function matchDescriptor(root: RlsNode, entries: readonly Entry[]): Match | undefined {
  let level: RlsNode = root;
  let found: RlsRule | undefined;
  let shared: Array<string | undefined> | undefined;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i] as Entry;
    const composite = `${e.key}_${e.value}`;
    let next = level.children.get(composite);
    let viaWildcard = false;
    if (next === undefined && level.wildcards.length > 0) {
      for (const w of level.wildcards) {
        if (wildcardMatch(w.parts, composite)) {
          next = level.children.get(w.key);
          viaWildcard = true;
          break;
        }
      }
    }
    if (next === undefined) next = level.children.get(e.key);
    if (next === undefined) break;
    if (viaWildcard && next.sharePattern !== undefined) {
      shared ??= new Array<string | undefined>(entries.length);
      shared[i] = next.sharePattern;
    }
    if (next.rule !== undefined && i === entries.length - 1) found = next.rule;
    if (next.children.size === 0) break;
    level = next;
  }
  return found === undefined ? undefined : { rule: found, shared };
}

/** `matchDescriptor` on the domain's tree; `undefined` also when the domain is unknown. */
export function matchRequest(config: RlsConfig, domain: string, entries: readonly Entry[]): Match | undefined {
  const root = config.domains.get(domain);
  return root === undefined ? undefined : matchDescriptor(root, entries);
}
