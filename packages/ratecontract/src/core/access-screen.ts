import type { LimiterLists } from './access-list.js';
import type { CompiledLimit, RequestContext } from './types.js';

/** What the allow and deny lists decided for one check, before any store call. */
export interface Screen {
  /** A deny list matched: the limit whose list it is, or `null` for the limiter's own. */
  readonly denied: CompiledLimit | null | undefined;
  /** Per limit: skipped by an allow list. */
  readonly skip: readonly boolean[];
  /** Every limit skipped (or denied): nothing left for a store to decide. */
  readonly terminal: boolean;
}

/**
 * The allow and deny lists, before any key function or store call. Every
 * deny list first (the limiter's, then each limit's): a deny anywhere wins
 * over any allow. Then the limiter's allow list (skips every limit) and
 * each limit's (skips that limit). `undefined`: nothing listed this request.
 */
export function screenRequest(limits: readonly CompiledLimit[], lists: LimiterLists, ctx: RequestContext): Screen | undefined {
  const n = limits.length;
  let denied: CompiledLimit | null | undefined = lists.deny.matches(ctx) ? null : undefined;
  for (let i = 0; denied === undefined && i < n; i++) {
    const l = limits[i] as CompiledLimit;
    if (l.deny.matches(ctx)) denied = l;
  }
  if (denied !== undefined) return { denied, skip: new Array<boolean>(n).fill(false), terminal: true };
  const all = lists.allow.matches(ctx);
  const skip = new Array<boolean>(n).fill(all);
  let skipped = all ? n : 0;
  for (let i = 0; !all && i < n; i++) {
    if ((limits[i] as CompiledLimit).allow.matches(ctx)) {
      skip[i] = true;
      skipped++;
    }
  }
  if (skipped === 0) return undefined;
  return { denied: undefined, skip, terminal: skipped === n };
}
