import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { RouteTable, normalisePath, parseRoutePattern } from '../../src/config/route-pattern.js';

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
