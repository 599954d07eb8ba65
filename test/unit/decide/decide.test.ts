/**
 * decide's pure parts: reading the original request from a subrequest's
 * fields, and the routes `--emit` writes (order, fail mode, regular
 * expressions), checked against the route table the servers match with.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig, RouteTable } from 'ratecontract/config';
import { methodRegex, pathRegex, proxyRoutes } from '../../../packages/cli/src/decide/emit.js';
import { readOriginalRequest } from '../../../packages/cli/src/decide/original-request.js';

describe('readOriginalRequest', () => {
  it('reads either family, upper-cases the method, takes an absolute target as its path and query', () => {
    expect(readOriginalRequest({ 'x-forwarded-method': 'post', 'x-forwarded-uri': '/login?a=1' })).toEqual({ method: 'POST', uri: '/login?a=1' });
    expect(readOriginalRequest({ 'x-original-method': 'GET', 'x-original-uri': '/x' })).toEqual({ method: 'GET', uri: '/x' });
    expect(readOriginalRequest({ 'x-forwarded-method': 'GET', 'x-forwarded-uri': 'https://api.example/a/b?c' })).toEqual({ method: 'GET', uri: '/a/b?c' });
    expect(readOriginalRequest({ 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/x', 'x-original-method': 'GET', 'x-original-uri': '/x' })).toEqual({ method: 'GET', uri: '/x' });
  });

  it.each([
    [{}, 'names no original request'],
    [{ 'x-forwarded-method': 'GET' }, 'only one of X-Forwarded-Method and X-Forwarded-Uri'],
    [{ 'x-forwarded-method': 'G T', 'x-forwarded-uri': '/' }, 'is not an HTTP method'],
    [{ 'x-forwarded-method': 'GET', 'x-forwarded-uri': 'login' }, 'neither a path'],
    [{ 'x-forwarded-method': 'POST', 'x-forwarded-uri': '/login', 'x-original-method': 'GET', 'x-original-uri': '/health' }, 'disagree'],
  ])('refuses %j', (headers, detail) => {
    const r = readOriginalRequest(headers);
    expect('detail' in r && r.detail).toContain(detail);
  });
});

describe('proxyRoutes and the emitted expressions', () => {
  const config = parseConfig(
    `limits:
  - { name: a, purpose: abuse, limit: 1, window: 1s, key: ip }
  - { name: s, purpose: shedding, limit: 1, window: 1s, key: ip }
  - { name: o, purpose: abuse, limit: 1, window: 1s, key: ip, onError: open, acknowledgeFailOpen: the login page must stay up }
routes:
  - { match: '* /api/*', limits: [a] }
  - { match: 'GET /api/health', limits: [] }
  - { match: 'GET /api/items/:id', limits: [s] }
  - { match: 'POST /api/items/:id', limits: [s, a] }
  - { match: 'HEAD /api/items/:id', limits: [o] }
  - { match: 'GET /', limits: [s] }
`,
    { file: 'c.yaml' },
  );

  it('gives a route deny when a limit fails closed, pass otherwise, most specific first', () => {
    const routes = proxyRoutes(config);
    expect(routes.map((r) => `${r.pattern.source} ${r.unreachable}`)).toEqual([
      'POST /api/items/:id deny',
      'HEAD /api/items/:id pass',
      'GET /api/items/:id pass',
      'GET /api/health pass',
      '* /api/* deny',
      'GET / pass',
    ]);
  });

  it('matches with the first expression that fits what the route table picks, for every request tried', () => {
    const routes = proxyRoutes(config);
    const table = new RouteTable(config.routes.map((r) => ({ pattern: r.pattern, value: r.pattern.source })));
    const first = (method: string, path: string): string | undefined =>
      routes.find((r) => new RegExp(`^${methodRegex(r.pattern)}$`).test(method) && new RegExp(pathRegex(r.pattern)).test(path))?.pattern.source;
    for (const method of ['GET', 'HEAD', 'POST', 'DELETE']) {
      for (const path of ['/', '/api', '/api/health', '/api/health/', '/api/items/7', '/api/items/7/x', '/api/items', '/other', '/api/a.b']) {
        expect([method, path, first(method, path)]).toEqual([method, path, table.match(method, path)?.value]);
      }
    }
  });
});
