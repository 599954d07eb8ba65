import { ConfigError } from '../core/errors.js';

/**
 * Route patterns: `METHOD /path`, where METHOD is an HTTP method in upper
 * case or `*` (any method), and the path is made of `/`-separated segments:
 * - a literal segment (`otp`, `v1.json`) matches itself, case-sensitively;
 * - `:name` matches any one non-empty segment;
 * - a final `*` matches the rest of the path, zero or more segments
 *   (`/static/*` matches `/static`, `/static/a.css` and `/static/a/b.css`).
 *
 * Request paths are normalised before matching, so that spelling a path
 * differently cannot pick a route with fewer limits: the query is dropped,
 * each segment is percent-decoded, empty segments (`//`, a trailing `/`)
 * and `.` are dropped, and `..` removes the segment before it.
 *
 * Precedence, when several patterns match: the most specific path wins,
 * compared segment by segment from the left (a literal beats `:param`, which
 * beats the end of a shorter pattern, which beats `*`); on equal paths, the
 * exact method beats `GET` matching a `HEAD` request, which beats `*`. Two
 * routes with the same method and path shape are refused as duplicates, so
 * the winner never depends on the order of the file.
 */
export type Segment =
  | { readonly kind: 'literal'; readonly value: string }
  | { readonly kind: 'param'; readonly name: string }
  | { readonly kind: 'wildcard' };

export interface RoutePattern {
  /** Upper-case method, or `'*'`. */
  readonly method: string;
  readonly segments: readonly Segment[];
  /** The pattern as written. */
  readonly source: string;
  /** Method and path with parameter names erased: two patterns with the same shape match the same requests. */
  readonly shape: string;
}

const METHOD = /^(?:\*|[A-Z][A-Z-]*)$/;
const PARAM = /^:[A-Za-z_][A-Za-z0-9_]*$/;
/** RFC 3986 pchar, without `%`-escapes checked here (decoded below). */
const LITERAL = /^[A-Za-z0-9._~!$&'()+,;=@:%-]+$/;

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Parses `'POST /otp/send'`; throws a `ConfigError` (`RC_INVALID_ROUTE`) naming `option`. */
export function parseRoutePattern(match: unknown, option: string): RoutePattern {
  if (typeof match !== 'string') throw new ConfigError('RC_INVALID_ROUTE', option, `expected a string such as 'POST /otp/send', got ${match === null ? 'nothing (null)' : typeof match}`);
  const parts = match.trim().split(/\s+/);
  if (parts.length !== 2) throw new ConfigError('RC_INVALID_ROUTE', option, `${JSON.stringify(match)} is not 'METHOD /path' (for example 'POST /otp/send', or '* /static/*' for any method)`);
  const [method = '', path = ''] = parts;
  if (!METHOD.test(method)) throw new ConfigError('RC_INVALID_ROUTE', option, `${JSON.stringify(method)} is not a method: write it in upper case (GET, POST, ...) or * for any`);
  if (!path.startsWith('/')) throw new ConfigError('RC_INVALID_ROUTE', option, `the path ${JSON.stringify(path)} must start with /`);
  const raw = path === '/' ? [] : path.slice(1).split('/');
  const segments: Segment[] = raw.map((s, i): Segment => {
    if (s === '*') {
      if (i !== raw.length - 1) throw new ConfigError('RC_INVALID_ROUTE', option, `* may only be the last segment of ${JSON.stringify(path)}`);
      return { kind: 'wildcard' };
    }
    if (s.startsWith(':')) {
      if (!PARAM.test(s)) throw new ConfigError('RC_INVALID_ROUTE', option, `${JSON.stringify(s)} is not a parameter: write :name with letters, digits and _`);
      return { kind: 'param', name: s.slice(1) };
    }
    if (s === '' ) throw new ConfigError('RC_INVALID_ROUTE', option, `the path ${JSON.stringify(path)} has an empty segment (// or a trailing /)`);
    if (s === '.' || s === '..' || !LITERAL.test(s)) {
      throw new ConfigError('RC_INVALID_ROUTE', option, `${JSON.stringify(s)} is not a path segment (no *, ?, #, spaces, . or .. inside a segment)`);
    }
    return { kind: 'literal', value: decode(s) };
  });
  const names = segments.flatMap((s) => (s.kind === 'param' ? [s.name] : []));
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) throw new ConfigError('RC_INVALID_ROUTE', option, `parameter :${dup} appears twice in ${JSON.stringify(path)}`);
  const shape = `${method} /${segments.map((s) => (s.kind === 'literal' ? encodeURIComponent(s.value) : s.kind === 'param' ? ':' : '*')).join('/')}`;
  return { method, segments, source: match.trim(), shape };
}

/** Splits and normalises a request path (see the module's doc); the query and fragment are ignored. */
export function normalisePath(path: string): string[] {
  let end = path.length;
  const q = path.indexOf('?');
  if (q >= 0) end = q;
  const h = path.indexOf('#');
  if (h >= 0 && h < end) end = h;
  const out: string[] = [];
  for (const raw of path.slice(0, end).split('/')) {
    const s = raw.includes('%') ? decode(raw) : raw;
    if (s === '' || s === '.') continue;
    if (s === '..') out.pop();
    else out.push(s);
  }
  return out;
}

/** Specificity rank of what a pattern has at a position, for comparing two patterns that match the same path. */
function rank(s: Segment | undefined): number {
  if (s === undefined) return 2; // the end of a shorter pattern: the other has `*` here
  if (s.kind === 'literal') return 4;
  if (s.kind === 'param') return 3;
  return 1;
}

/** Negative when `a` is more specific than `b` (path first, then method, for a request with `method`). */
export function compareSpecificity(a: RoutePattern, b: RoutePattern, method: string): number {
  const n = Math.max(a.segments.length, b.segments.length);
  for (let i = 0; i < n; i++) {
    const d = rank(b.segments[i]) - rank(a.segments[i]);
    if (d !== 0) return d;
  }
  return methodRank(b.method, method) - methodRank(a.method, method);
}

/** How well a pattern's method fits a request's: 3 exact, 2 GET for HEAD, 1 any, 0 no match. */
function methodRank(pattern: string, method: string): number {
  if (pattern === method) return 3;
  if (pattern === 'GET' && method === 'HEAD') return 2;
  if (pattern === '*') return 1;
  return 0;
}

/** The parameters a pattern binds on `segments`, or `undefined` when it does not match. */
export function matchSegments(pattern: RoutePattern, segments: readonly string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  const p = pattern.segments;
  for (let i = 0; i < p.length; i++) {
    const s = p[i] as Segment;
    if (s.kind === 'wildcard') {
      params['*'] = segments.slice(i).join('/');
      return params;
    }
    const got = segments[i];
    if (got === undefined) return undefined;
    if (s.kind === 'literal') {
      if (got !== s.value) return undefined;
    } else {
      params[s.name] = got;
    }
  }
  return segments.length === p.length ? params : undefined;
}

/** A route that matched, with its parameters (`*` holds what the wildcard matched). */
export interface RouteMatch<T> {
  readonly value: T;
  readonly pattern: RoutePattern;
  readonly params: Readonly<Record<string, string>>;
}

/** A table of routes; `match` returns the most specific one (see the module's doc). */
export class RouteTable<T> {
  readonly #routes: readonly { readonly pattern: RoutePattern; readonly value: T }[];

  constructor(routes: readonly { readonly pattern: RoutePattern; readonly value: T }[]) {
    this.#routes = routes;
  }

  /** The best route for a request, or `undefined` when none matches. `path` may carry a query. */
  match(method: string, path: string): RouteMatch<T> | undefined {
    const m = method.toUpperCase();
    const segments = normalisePath(path);
    let best: RouteMatch<T> | undefined;
    for (const r of this.#routes) {
      if (methodRank(r.pattern.method, m) === 0) continue;
      const params = matchSegments(r.pattern, segments);
      if (params === undefined) continue;
      if (best === undefined || compareSpecificity(r.pattern, best.pattern, m) < 0) best = { value: r.value, pattern: r.pattern, params };
    }
    return best;
  }
}
