import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../packages/ratecontract/src/core/errors.js';
import { RouteTable, compareSpecificity, matchSegments, normalisePath, parseRoutePattern } from '../../../packages/ratecontract/src/config/route-pattern.js';
import { fcBudget } from '../../helpers/fc-budget.js';

function table(...matches: string[]): RouteTable<string> {
  return new RouteTable(matches.map((m, i) => ({ pattern: parseRoutePattern(m, `routes[${i}].match`), value: m })));
}

describe('route patterns', () => {
  it('parses method, literals, params and a final wildcard', () => {
    const p = parseRoutePattern(' GET  /users/:id/files/* ', 'm');
    expect(p.method).toBe('GET');
    expect(p.source).toBe('GET  /users/:id/files/*');
    expect(p.segments).toEqual([{ kind: 'literal', value: 'users' }, { kind: 'param', name: 'id' }, { kind: 'literal', value: 'files' }, { kind: 'wildcard' }]);
    expect(p.shape).toBe('GET /users/:/files/*');
    expect(parseRoutePattern('* /', 'm').segments).toEqual([]);
  });

  it.each([
    ['POST', '"POST" is not \'METHOD /path\''],
    ['post /a', '"post" is not a method'],
    ['GET a', 'the path "a" must start with /'],
    ['GET /a/*/b', '* may only be the last segment'],
    ['GET /a//b', 'has an empty segment'],
    ['GET /a/', 'has an empty segment'],
    ['GET /a/:', '":" is not a parameter'],
    ['GET /a/:id/:id', 'parameter :id appears twice'],
    ['GET /a?x=1', 'is not a path segment'],
    ['GET /a/..', 'is not a path segment'],
    ['GET /a b c', "is not 'METHOD /path'"],
  ])('refuses %j', (match, message) => {
    let error: unknown;
    try {
      parseRoutePattern(match, 'routes[3].match');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('RC_INVALID_ROUTE');
    expect((error as ConfigError).option).toBe('routes[3].match');
    expect((error as ConfigError).message).toContain(message);
  });
});

describe('request paths are normalised so another spelling cannot pick another route', () => {
  it.each([
    ['/otp/send', ['otp', 'send']],
    ['/otp/send/', ['otp', 'send']],
    ['//otp///send', ['otp', 'send']],
    ['/otp/./send', ['otp', 'send']],
    ['/x/../otp/send', ['otp', 'send']],
    ['/../otp/send', ['otp', 'send']],
    ['/%6Ftp/send', ['otp', 'send']],
    ['/otp/send?to=1#frag', ['otp', 'send']],
    ['/a%2Fb', ['a/b']],
    ['/bad%zz', ['bad%zz']],
    ['/', []],
  ])('%s', (path, segments) => {
    expect(normalisePath(path)).toEqual(segments);
  });
});

describe('route matching: most specific wins', () => {
  const t = table('GET /users/:id', 'GET /users/me', 'GET /users/:id/files/*', '* /users/*', 'GET /static/*', 'HEAD /users/me', 'POST /otp/send', '* /*');

  it.each([
    ['GET', '/users/me', 'GET /users/me', {}],
    ['GET', '/users/42', 'GET /users/:id', { id: '42' }],
    ['GET', '/users/42/files/a/b.txt', 'GET /users/:id/files/*', { id: '42', '*': 'a/b.txt' }],
    ['GET', '/users/42/files', 'GET /users/:id/files/*', { id: '42', '*': '' }],
    ['DELETE', '/users/42', '* /users/*', { '*': '42' }],
    ['GET', '/users', '* /users/*', { '*': '' }],
    ['GET', '/static', 'GET /static/*', { '*': '' }],
    ['HEAD', '/users/me', 'HEAD /users/me', {}],
    ['HEAD', '/users/7', 'GET /users/:id', { id: '7' }],
    ['post', '/otp/send/', 'POST /otp/send', {}],
    ['GET', '/otp/send', '* /*', { '*': 'otp/send' }],
    ['PUT', '/', '* /*', { '*': '' }],
  ])('%s %s -> %s', (method, path, winner, params) => {
    const m = t.match(method, path);
    expect(m?.value).toBe(winner);
    expect(m?.params).toEqual(params);
  });

  it('does not depend on the order of the routes', () => {
    const reversed = table('* /*', 'POST /otp/send', 'HEAD /users/me', 'GET /static/*', '* /users/*', 'GET /users/:id/files/*', 'GET /users/me', 'GET /users/:id');
    for (const [m, p] of [['GET', '/users/me'], ['GET', '/users/1'], ['HEAD', '/users/1'], ['DELETE', '/users/1'], ['GET', '/users/1/files/x']] as const) {
      expect(reversed.match(m, p)?.value).toBe(t.match(m, p)?.value);
    }
  });

  it('matches nothing when no route fits', () => {
    const only = table('POST /otp/send', 'GET /users/:id');
    expect(only.match('GET', '/otp/send')).toBeUndefined();
    expect(only.match('GET', '/users')).toBeUndefined();
    expect(only.match('GET', '/users/1/2')).toBeUndefined();
    expect(only.match('GET', '/Users/1')).toBeUndefined();
  });
});

describe('route matching properties', () => {
  const segment = fc.constantFrom('a', 'b', ':p', ':q');
  const patternArb = fc
    .tuple(fc.constantFrom('GET', 'POST', 'HEAD', '*'), fc.array(segment, { maxLength: 3 }), fc.boolean())
    .map(([m, segs, star]) => `${m} /${[...segs.map((x, i) => (x.startsWith(':') ? `${x}${i}` : x)), ...(star ? ['*'] : [])].join('/')}`);

  it('the winner matches, nothing that matches is more specific, and the order of the routes does not matter', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(patternArb, { minLength: 1, maxLength: 12, selector: (m) => parseRoutePattern(m, 'm').shape }),
        fc.constantFrom('GET', 'POST', 'HEAD', 'PUT'),
        fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 4 }),
        fc.integer(),
        (matches, method, segs, seed) => {
          const path = `/${segs.join('/')}`;
          const patterns = matches.map((m) => parseRoutePattern(m, 'm'));
          const best = new RouteTable(patterns.map((p) => ({ pattern: p, value: p.source }))).match(method, path);
          const shuffled = [...patterns].sort((x, y) => ((x.shape.length * 31 + seed) % 7) - ((y.shape.length * 31 + seed) % 7) || (x.shape < y.shape ? 1 : -1));
          const again = new RouteTable(shuffled.map((p) => ({ pattern: p, value: p.source }))).match(method, path);
          expect(again?.value).toBe(best?.value);
          const fits = patterns.filter((p) => (p.method === method || p.method === '*' || (p.method === 'GET' && method === 'HEAD')) && matchSegments(p, normalisePath(path)) !== undefined);
          expect(best === undefined).toBe(fits.length === 0);
          if (best !== undefined) for (const p of fits) expect(compareSpecificity(p, best.pattern, method)).toBeGreaterThanOrEqual(0);
        },
      ),
      fcBudget({ runs: 500 }),
    );
  });
});
