import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigFileError, loadConfig, parseConfig, validateConfig } from '../../../packages/ratecontract/src/config/index.js';
import { DEMO_CONFIG_FILE, DEMO_CONFIG_YAML, demoConfig } from '../../../packages/cli/src/contract/demo.js';
import { ConfigError, createLimiter, memoryStore, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

function refusal(run: () => unknown): ConfigFileError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigFileError);
    return error as ConfigFileError;
  }
  throw new Error('expected a ConfigFileError, nothing was thrown');
}

describe('parseConfig', () => {
  it('returns the typed contract, with the library defaults applied in `compiled`', () => {
    const c = parseConfig(
      `stores:
  abuse: { type: redis, url: redis://127.0.0.1:6380, deadline: 5ms, breaker: { failureThreshold: 4, cooldown: 2s } }
replicas: 3
limits:
  - { name: otp, purpose: abuse, limit: 3, window: 15m, key: body.phone, store: abuse, reason: r }
  - { name: all, purpose: shedding, limit: 50, window: 1s, key: global }
routes:
  - { match: 'POST /otp/send', limits: [otp, all] }
  - { match: GET /health, limits: [] }
http:
  trustProxy: [10.0.0.0/8, loopback]
  identify: { header: X-User-Id }
`,
      { file: 'ratecontract.yaml' },
    );
    expect(c.file).toBe('ratecontract.yaml');
    expect(c.replicas).toBe(3);
    expect(c.stores.abuse).toEqual({ type: 'redis', url: 'redis://127.0.0.1:6380', deadline: '5ms', breaker: { failureThreshold: 4, cooldown: '2s' } });
    expect(c.limits[0]).toEqual({ name: 'otp', purpose: 'abuse', limit: 3, window: '15m', key: 'body.phone', store: 'abuse', reason: 'r' });
    expect(c.compiled.map((l) => [l.name, l.onError, l.algorithm, l.status, l.params.windowMs, l.storeName])).toEqual([
      ['otp', 'closed', 'gcra', 429, 900_000, 'abuse'],
      ['all', 'degraded', 'gcra', 503, 1000, undefined],
    ]);
    expect(c.routes.map((r) => [r.match, r.limits, r.pattern.method])).toEqual([
      ['POST /otp/send', ['otp', 'all'], 'POST'],
      ['GET /health', [], 'GET'],
    ]);
    expect(c.http).toEqual({ trustProxy: ['10.0.0.0/8', 'loopback'], identify: { header: 'x-user-id' } });
  });

  it('reads JSON too', () => {
    const c = parseConfig('{"limits": [{"name": "a", "purpose": "shedding", "limit": 1, "window": 1000}], "routes": [{"match": "GET /", "limits": ["a"]}]}', { file: 'c.json' });
    expect(c.compiled[0]?.params.windowMs).toBe(1000);
    expect(c.replicas).toBe(1);
    expect(c.stores).toEqual({});
  });

  it('the issue\'s example error: file, path, what is wrong, and where', () => {
    const e = refusal(() =>
      parseConfig(
        `limits:
  - { name: a, purpose: abuse, limit: 1, window: 1m }
  - { name: b, purpose: abuse, limit: 1, window: 1m }
  - name: c
    purpose: abuse
    limit: 5
    window: 15x
routes: []
`,
        { file: 'ratecontract.yaml' },
      ),
    );
    expect(e.message).toBe(`ratecontract.yaml: limits[2].window: "15x" is not a duration; expected one such as '500ms', '60s', '15m', '1h', '1d' or a number of milliseconds (line 7, column 5)`);
    expect([e.code, e.file, e.option, e.line, e.column]).toEqual(['RC_INVALID_WINDOW', 'ratecontract.yaml', 'limits[2].window', 7, 5]);
    expect(e.detail).toMatch(/^"15x" is not a duration/);
    expect(e).toBeInstanceOf(ConfigError);
  });

  it('resolves JWT key files against the config file\'s folder', () => {
    const c = parseConfig('limits: []\nroutes: []\nhttp:\n  identify: { jwt: { publicKeyFile: keys/pub.pem } }\n', { file: '/etc/rc/ratecontract.yaml' });
    expect(c.http.identify).toEqual({ jwt: { claim: 'sub', publicKeyFile: '/etc/rc/keys/pub.pem' } });
  });

  it('refuses YAML that is not plain data: anchors used past the alias bound, unknown tags', () => {
    expect(refusal(() => parseConfig('limits: !!js/function "x"\nroutes: []\n', { file: 'f.yaml' })).code).toBe('RC_CONFIG_SYNTAX');
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]', ...Array.from({ length: 8 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}]`)].join('\n');
    expect(refusal(() => parseConfig(bomb, { file: 'f.yaml' })).code).toBe('RC_CONFIG_SYNTAX');
  });

  it('validateConfig gives the path without the file, for callers that parse themselves', () => {
    let error: unknown;
    try {
      validateConfig({ limits: [], routes: [{ match: 'GET /', limits: ['nope'] }] }, { file: 'x' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).option).toBe('routes[0].limits[0]');
    expect((error as ConfigError).code).toBe('RC_UNKNOWN_LIMIT');
  });
});

describe('one validation path with the library', () => {
  it('createLimiter refuses the same misspelt option with the same hint', () => {
    const def = { name: 'a', purpose: 'abuse', limit: 3, window: '15m', onErorr: 'closed' } as unknown as LimitDefinition;
    let error: unknown;
    try {
      createLimiter({ limits: [def] });
    } catch (e) {
      error = e;
    }
    expect((error as ConfigError).message).toBe('limits[0].onErorr: unknown option "onErorr"; did you mean "onError"?');
    const fromFile = refusal(() => parseConfig('limits:\n  - { name: a, purpose: abuse, limit: 3, window: 15m, onErorr: closed }\nroutes: []\n', { file: 'f.yaml' }));
    expect(fromFile.detail).toBe('unknown option "onErorr"; did you mean "onError"?');
    expect(fromFile.code).toBe((error as ConfigError).code);
  });

  it('every limit in the file compiles exactly as createLimiter compiles it', async () => {
    const c = demoConfig();
    const lib = createLimiter({ limits: c.limits, stores: Object.fromEntries(Object.keys(c.stores).map((n) => [n, memoryStore()])) });
    const strip = (l: { key: unknown }) => ({ ...l, key: undefined });
    expect(c.compiled.map(strip)).toEqual(lib.limits.map(strip));
    await lib.close();
  });

  it("a contract file with the old quota mode 'lease' is refused at its path, hinting 'allotment'", () => {
    const e = refusal(() => parseConfig('limits:\n  - { name: a, purpose: shedding, limit: 100, window: 1m, tier: { mode: lease } }\nroutes: []\n', { file: 'f.yaml' }));
    expect(e.message).toContain('limits[0].tier.mode');
    expect(e.detail).toContain('did you mean "allotment"?');
  });

  it("createLimiter's old 'store' option (a Store object) is refused, hinting 'defaultStore'", () => {
    expect(() => createLimiter({ limits: [{ name: 'a', purpose: 'abuse', limit: 3, window: '1m' }], store: memoryStore() } as never)).toThrow(/store: unknown option "store"; did you mean "defaultStore"\?/);
  });

  it('a misspelt algorithm is hinted in the library too', () => {
    expect(() => createLimiter({ limits: [{ name: 'a', purpose: 'abuse', limit: 3, window: '1m', algorithm: 'token_bucket' as never }] })).toThrow(/did you mean "token-bucket"\?/);
  });
});

describe('loadConfig', () => {
  it('loads a file and names it as given', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rc-config-'));
    const file = join(dir, 'ratecontract.yaml');
    writeFileSync(file, DEMO_CONFIG_YAML);
    const c = await loadConfig(file);
    expect(c.file).toBe(file);
    expect(c.routes.length).toBe(4);
  });

  it('an unreadable file is a ConfigFileError with RC_CONFIG_UNREADABLE', async () => {
    const error = await loadConfig('/nonexistent/ratecontract.yaml').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigFileError);
    expect((error as ConfigFileError).code).toBe('RC_CONFIG_UNREADABLE');
    expect((error as ConfigFileError).message).toBe('/nonexistent/ratecontract.yaml: cannot read the file (ENOENT: no such file or directory)');
  });
});

describe('loadConfig checks the JWT key files a config names', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-keys-'));
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(join(dir, 'pub.pem'), publicKey.export({ type: 'spki', format: 'pem' }));
  writeFileSync(join(dir, 'private.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256' }] }));
  writeFileSync(join(dir, 'hmac-jwks.json'), JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }));
  writeFileSync(join(dir, 'empty-jwks.json'), JSON.stringify({ keys: [] }));
  writeFileSync(join(dir, 'garbage.pem'), 'not a key\n');
  const contract = (jwt: string): string => {
    const file = join(dir, `c-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, `limits: []\nroutes: []\nhttp:\n  identify:\n    jwt: { ${jwt}, claim: sub }\n`);
    return file;
  };

  it('accepts a PEM public key and a JWKS, resolved against the file\'s folder', async () => {
    expect((await loadConfig(contract('publicKeyFile: pub.pem'))).http.identify).toEqual({ jwt: { claim: 'sub', publicKeyFile: join(dir, 'pub.pem') } });
    expect((await loadConfig(contract('jwksFile: jwks.json'))).http.identify).toEqual({ jwt: { claim: 'sub', jwksFile: join(dir, 'jwks.json') } });
  });

  it.each([
    ['publicKeyFile: missing.pem', 'http.identify.jwt.publicKeyFile', `cannot read ${join(dir, 'missing.pem')} (ENOENT)`],
    ['publicKeyFile: garbage.pem', 'http.identify.jwt.publicKeyFile', `${join(dir, 'garbage.pem')} does not hold a PEM public key`],
    ['publicKeyFile: private.pem', 'http.identify.jwt.publicKeyFile', 'holds a private key: give the public key only'],
    ['jwksFile: garbage.pem', 'http.identify.jwt.jwksFile', `${join(dir, 'garbage.pem')} is not JSON`],
    ['jwksFile: empty-jwks.json', 'http.identify.jwt.jwksFile', 'it needs a non-empty "keys" list'],
    ['jwksFile: hmac-jwks.json', 'http.identify.jwt.jwksFile', 'keys[0] is not a usable public key (a JWKS for verification holds public keys)'],
  ])('%s is refused', async (jwt, option, detail) => {
    const file = contract(jwt);
    const error = (await loadConfig(file).catch((e: unknown) => e)) as ConfigFileError;
    expect(error).toBeInstanceOf(ConfigFileError);
    expect(error.option).toBe(option);
    expect(error.detail).toContain(detail);
    expect(error.message.startsWith(`${file}: ${option}: `)).toBe(true);
    expect(error.line).toBe(5);
  });

  it('parseConfig alone reads no file', () => {
    expect(() => parseConfig('limits: []\nroutes: []\nhttp:\n  identify: { jwt: { jwksFile: /nonexistent/jwks.json } }\n', { file: 'x.yaml' })).not.toThrow();
  });
});

describe('the built-in demo contract', () => {
  it('is the OTP case: four routes, every limit with a reason, abuse and shedding in separate stores', () => {
    const c = demoConfig();
    expect(c.file).toBe(DEMO_CONFIG_FILE);
    expect(Object.fromEntries(c.routes.map((r) => [r.match, r.limits]))).toEqual({
      'POST /otp/send': ['otp-recipient', 'otp-tenant', 'otp-ip', 'otp-global'],
      'POST /login': ['login-account', 'login-ip'],
      'GET /search': ['search-tenant', 'search-ip'],
      'GET /health': [],
    });
    const by = new Map(c.compiled.map((l) => [l.name, l]));
    expect(by.get('otp-recipient')?.keySpec).toBe('body.phone');
    expect(by.get('otp-global')?.keySpec).toBe('global');
    expect(by.get('otp-global')?.status).toBe(503);
    expect(by.get('search-tenant')?.purpose).toBe('shedding');
    expect(by.get('login-account')?.purpose).toBe('abuse');
    for (const l of c.compiled) expect(l.reason?.length, l.name).toBeGreaterThan(10);
    const storesOf = (p: string) => new Set(c.compiled.filter((l) => l.purpose === p).map((l) => l.storeName));
    expect([...storesOf('abuse')]).toEqual(['abuse']);
    expect([...storesOf('shedding')]).toEqual(['shared']);
  });

  it('is shipped as examples/ratecontract.yaml, word for word', () => {
    expect(readFileSync(`${root}examples/ratecontract.yaml`, 'utf8')).toBe(DEMO_CONFIG_YAML);
  });
});
