/**
 * Raw HTTP/1.1 requests for the servers' fuzz tests: request lines,
 * targets, headers and bodies a real client would never send, written to a
 * plain TCP socket so nothing on the way tidies them up.
 */
import { connect } from 'node:net';
import fc from 'fast-check';
import { HOSTILE_KEYS } from './mutate.js';
import { forwardedValue, xffValue } from './targets/forwarded.js';

/** One raw request. */
export interface RawRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: string;
}

/** What came back: the status of the first response line, or what went wrong. */
export type RawAnswer = { readonly status: number; readonly ms: number; readonly head: string } | { readonly error: string; readonly ms: number };

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'get', 'Get', 'PROPFIND', 'X-FUZZ', 'M'.repeat(40)] as const;
const SEGMENTS = ['', '.', '..', '%2e', '%2e%2e', '%2F', '%00', '%zz', '[', ']', '@', ':', ';', 'a', '*', '~', '__proto__', 'constructor', '%E2%80%AE'] as const;

/** A target: one of `paths` (the server's own), a variant of it (slashes, dots, case, escapes, a query, a fragment), or anything. */
export function targetArb(paths: readonly string[]): fc.Arbitrary<string> {
  const known = fc.constantFrom(...paths);
  const query = fc.oneof(
    fc.constant(''),
    fc.webQueryParameters().map((q) => `?${q}`),
    fc.array(fc.tuple(fc.constantFrom('q', 'id', 'format', ...HOSTILE_KEYS, ''), fc.constantFrom('1', '', '%00', 'a b', '[]', 'x'.repeat(100))), { maxLength: 4 }).map((ps) => `?${ps.map(([k, v]) => `${k}=${v}`).join('&')}`),
    fc.constantFrom('?', '??', '?&&', '#frag', '?a#b'),
  );
  const variant = fc.tuple(known, fc.constantFrom('', '/', '//', '/.', '/..', '/x', '%20', '.json'), fc.constantFrom('', '/', '//', '/./', '/../x/../', '/a/..'), fc.boolean()).map(([p, suffix, prefix, upper]) => {
    const t = `${prefix.slice(0, -1)}${p}${suffix}`;
    return upper ? t.toUpperCase() : t;
  });
  const segments = fc.array(fc.oneof(fc.constantFrom(...SEGMENTS), known.map((p) => p.slice(1))), { maxLength: 6 }).map((s) => `/${s.join('/')}`);
  return fc
    .tuple(
      fc.oneof(
        { weight: 4, arbitrary: known },
        { weight: 3, arbitrary: variant },
        { weight: 3, arbitrary: segments },
        { weight: 1, arbitrary: fc.constantFrom('*', 'http://127.0.0.1/metrics', 'http://x/', 'x', '', '/'.repeat(200), `/${'a'.repeat(9000)}`) },
        { weight: 1, arbitrary: fc.webPath() },
      ),
      query,
    )
    .map(([p, q]) => `${p}${q}`.replace(/[\s]/g, '%20'));
}

const headerArb: fc.Arbitrary<readonly [string, string]> = fc.oneof(
  xffValue.map((v) => ['X-Forwarded-For', v] as const),
  forwardedValue.map((v) => ['Forwarded', v] as const),
  fc.constantFrom('t1', '', '__proto__', 'x'.repeat(300)).map((v) => ['X-Tenant', v] as const),
  fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-16', '').map((v) => ['Content-Type', v] as const),
  fc.constantFrom('websocket', 'h2c').map((v) => ['Upgrade', v] as const),
  fc.constantFrom('gzip', 'identity').map((v) => ['Accept-Encoding', v] as const),
  fc.tuple(fc.constantFrom('X-A', 'Cookie', 'Authorization', 'Expect'), fc.string({ maxLength: 20 }).map((s) => s.replace(/[\r\n]/g, ''))),
);

const bodyArb: fc.Arbitrary<string> = fc.oneof(
  fc.constant(''),
  fc.constantFrom('{"phone":"+15550001"}', '{"phone":1}', '{"__proto__":{"phone":"x"}}', '{"constructor":{"prototype":{"polluted":1}}}', '[', '{"phone":"' + 'x'.repeat(2000) + '"}', 'null', '"x"'),
  fc.json({ maxDepth: 3 }),
);

/** A raw request to a server whose own paths are `paths`. */
export function requestArb(paths: readonly string[], methods: readonly string[] = METHODS): fc.Arbitrary<RawRequest> {
  return fc.record({
    method: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...methods) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
    target: targetArb(paths),
    headers: fc.array(headerArb, { maxLength: 4 }),
    body: bodyArb,
  });
}

/** The request's bytes: a request line, Host, the headers, Content-Length when there is a body, and `Connection: close`. */
export function encode(r: RawRequest): string {
  const lines = [`${r.method} ${r.target} HTTP/1.1`, 'Host: 127.0.0.1', ...r.headers.map(([k, v]) => `${k}: ${v}`)];
  if (r.body !== '') lines.push(`Content-Length: ${Buffer.byteLength(r.body)}`);
  lines.push('Connection: close');
  return `${lines.join('\r\n')}\r\n\r\n${r.body}`;
}

/** Sends `bytes` to `url`'s host and port and reads the answer's status line; gives up after `budgetMs`. */
export function send(url: string, bytes: string, budgetMs: number): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const start = performance.now();
  return new Promise((resolve) => {
    let got = '';
    let done = false;
    const finish = (answer: RawAnswer): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(bytes));
    const timer = setTimeout(() => finish({ error: `no answer within ${budgetMs} ms`, ms: performance.now() - start }), budgetMs);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      got += d;
      const head = /^HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n/.exec(got);
      if (head !== null) finish({ status: Number(head[1]), ms: performance.now() - start, head: head[0].trim() });
    });
    socket.on('error', (e) => finish({ error: `socket error ${e.message}`, ms: performance.now() - start }));
    socket.on('close', () => finish({ error: got === '' ? 'closed without an answer' : `not an HTTP answer: ${JSON.stringify(got.slice(0, 80))}`, ms: performance.now() - start }));
  });
}
