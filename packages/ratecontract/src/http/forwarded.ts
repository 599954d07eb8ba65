/** Headers as Node and the adapters hold them: lower-case names; repeated fields as arrays or joined with `, `. */
export type HeaderRecord = Readonly<Record<string, string | readonly string[] | undefined>>;

/** Longest header value examined; a longer chain is cut to its rightmost part (the part trusted proxies wrote). */
const MAX_HEADER_CHARS = 8 * 1024;

function joined(v: string | readonly string[] | undefined): string | undefined {
  if (v === undefined) return undefined;
  const s = typeof v === 'string' ? v : v.join(',');
  return s.length > MAX_HEADER_CHARS ? s.slice(s.length - MAX_HEADER_CHARS) : s;
}

/** `1.2.3.4:80` -> `1.2.3.4`; `[::1]:80` -> `::1`; a bare IPv6 address is left alone. */
export function stripPort(node: string): string {
  if (node.startsWith('[')) {
    const end = node.indexOf(']');
    return end > 0 ? node.slice(1, end) : node;
  }
  const colon = node.indexOf(':');
  if (colon >= 0 && node.indexOf(':', colon + 1) < 0) return node.slice(0, colon);
  return node;
}

/** The addresses in `X-Forwarded-For`, leftmost (claimed client) first. */
export function parseXForwardedFor(value: string | readonly string[] | undefined): string[] {
  const s = joined(value);
  if (s === undefined) return [];
  const out: string[] = [];
  for (const part of s.split(',')) {
    const t = part.trim();
    if (t.length > 0) out.push(stripPort(t));
  }
  return out;
}

/**
 * The `for=` nodes of an RFC 7239 `Forwarded` header, leftmost first. An
 * element without `for=` yields `''` (not an address), so the walk through
 * trusted hops stops there.
 */
export function parseForwarded(value: string | readonly string[] | undefined): string[] {
  const s = joined(value);
  if (s === undefined) return [];
  const out: string[] = [];
  let forNode: string | undefined;
  let key = '';
  let val = '';
  let inKey = true;
  let quoted = false;
  let touched = false;
  const endPair = (): void => {
    if (key.trim().toLowerCase() === 'for') forNode ??= val.trim();
    key = '';
    val = '';
    inKey = true;
  };
  const endElement = (): void => {
    endPair();
    if (touched) out.push(forNode === undefined ? '' : stripPort(forNode));
    forNode = undefined;
    touched = false;
  };
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c !== ' ' && c !== '\t' && c !== ',') touched = true;
    if (quoted) {
      if (c === '\\' && i + 1 < s.length) val += s[++i] as string;
      else if (c === '"') quoted = false;
      else val += c;
    } else if (c === '"' && !inKey) {
      quoted = true;
    } else if (c === ';') {
      endPair();
    } else if (c === ',') {
      endElement();
    } else if (c === '=' && inKey) {
      inKey = false;
    } else if (inKey) {
      key += c;
    } else {
      val += c;
    }
  }
  endElement();
  return out;
}
