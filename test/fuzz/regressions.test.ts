/**
 * What each defect the fuzzers found now does, stated exactly (the corpus's
 * regress-*.txt files hold the inputs; this file holds the answers).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../integration/serve/helpers.js';
import { ConfigError, ConfigFileError, parseConfig, parseHttpDate, parseRlsConfig, requestFrom, resolveIpOptions, retryAfterMs } from './subjects.js';
import { descriptorsTarget } from './targets/descriptors.js';

describe('defects found by fuzzing', () => {
  it('a trustProxy entry named like an Object.prototype member is refused as not a CIDR, not a TypeError', () => {
    for (const entry of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const refuse = (): unknown => resolveIpOptions({ trustProxy: [entry] });
      expect(refuse).toThrow(ConfigError);
      expect(refuse).toThrow(`trustProxy[0]: not a CIDR, an address or one of loopback, linklocal, uniquelocal: ${JSON.stringify(entry)}`);
    }
    // The presets still work.
    expect(resolveIpOptions({ trustProxy: 'loopback' }).trust).toMatchObject({ kind: 'cidrs' });
  });

  it('a store named __proto__ is refused with RC_INVALID_NAME; before, it became the prototype of config.stores', () => {
    const text = 'stores:\n  __proto__: { type: memory }\nlimits:\n  - { name: a, purpose: shedding, limit: 3, window: 1m, key: ip }\nroutes:\n  - { match: GET /a, limits: [a] }\n';
    const parse = (): unknown => parseConfig(text, { file: 'c.yaml' });
    expect(parse).toThrow(ConfigFileError);
    expect(parse).toThrow('c.yaml: stores.__proto__: a store cannot be named __proto__ (it would set the prototype of the store table, not add a store) (line 2, column 3)');
    // A store named constructor (an ordinary data property of Object.prototype) is an ordinary own key.
    const ok = parseConfig(text.replace('__proto__', 'constructor').replace('key: ip }', 'key: ip, store: constructor }'), { file: 'c.yaml' });
    expect(Object.keys(ok.stores)).toEqual(['constructor']);
    expect(Object.getPrototypeOf(ok.stores)).toBe(Object.prototype);
  });

  describe('replay, on a log line whose time is no instant (npm run build first)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rc-fuzz-replay-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const contract = join(dir, 'c.yaml');
    writeFileSync(contract, 'limits:\n  - { name: a, purpose: shedding, limit: 3, window: 1m, key: ip }\nroutes:\n  - { match: GET /a, limits: [a] }\n');

    it('counts an epoch past the last Date (1e300) or a year before 100 as a malformed line; before, it stopped with "Invalid time value" (exit 2) or read 0099 as 1999', async () => {
      const log = join(dir, 'access.log');
      writeFileSync(
        log,
        [
          '{"time":"2026-12-01T10:00:00Z","method":"GET","path":"/a","ip":"192.0.2.1"}',
          '{"time":1e300,"method":"GET","path":"/a","ip":"192.0.2.1"}',
          '{"time":"99999999999999999999","method":"GET","path":"/a","ip":"192.0.2.1"}',
          '{"time":"0099-12-01T10:00:00Z","method":"GET","path":"/a","ip":"192.0.2.1"}',
          '',
        ].join('\n'),
      );
      const r = await runCli(['replay', contract, '--log', log, '--json']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const report = JSON.parse(r.stdout) as { log: { records: number; malformed: number; malformedLines: Array<{ line: number; reason: string }>; firstTime: string } };
      expect(report.log.records).toBe(1);
      expect(report.log.firstTime).toBe('2026-12-01T10:00:00.000Z');
      expect(report.log.malformedLines).toEqual([
        { line: 2, reason: 'bad time 1e+300' },
        { line: 3, reason: 'bad time "99999999999999999999"' },
        { line: 4, reason: 'bad time "0099-12-01T10:00:00Z"' },
      ]);
    });
  });

  it('an HTTP-date with a year below 100 is that year (before: 1900 + year, and its leap days were 1900s ones)', () => {
    const now = Date.UTC(2026, 11, 1, 10, 0, 0);
    expect(new Date(parseHttpDate('Sun, 06 Nov 0094 08:49:37 GMT', now) as number).toISOString()).toBe('0094-11-06T08:49:37.000Z');
    expect(new Date(parseHttpDate('Sun Nov  6 08:49:37 0001', now) as number).toISOString()).toBe('0001-11-06T08:49:37.000Z');
    // 29 February exists in 2000 and in the year 4, not in 1900 and not in the year 100.
    expect(parseHttpDate('Tue, 29 Feb 0004 00:00:00 GMT', now)).toBeDefined();
    expect(parseHttpDate('Mon, 29 Feb 0100 00:00:00 GMT', now)).toBeUndefined();
    expect(retryAfterMs('Tue, 01 Dec 2026 10:00:30 GMT', 'Tue, 01 Dec 2026 10:00:00 GMT', now)).toBe(30_000);
  });

  it('an rls limit override beyond a uint32, or beyond what the rule can count, is refused as a bad request (RlsServiceError UNKNOWN), not a ConfigError from inside', async () => {
    expect(() => requestFrom({ domain: 'edge', descriptors: [{ entries: [], limit: { requestsPerUnit: '18446744073709551615', unit: 'SECOND' } }] })).toThrow(
      new TypeError('descriptors[0].limit.requests_per_unit must be a non-negative integer of at most 4294967295 (a uint32), got "18446744073709551615"'),
    );
    expect(() => requestFrom({ domain: 'edge', descriptors: [], hits_addend: 2 ** 32 })).toThrow(TypeError);
    const input = '{"domain":"edge","descriptors":[{"entries":[{"key":"tenant","value":"t"},{"key":"plan","value":"free"}],"limit":{"requestsPerUnit":200000,"unit":"YEAR"}}]}';
    await expect(Promise.resolve().then(() => descriptorsTarget.run(input))).rejects.toThrow(
      "descriptors[0].limit: 200000 per year cannot be applied with the rule's algorithm (sliding-log keeps up to min(limit, window in ms) = 200000 log entries per key",
    );
  });

  it('a YAML alias inside the collection it names is a syntax error at its line; before, the validators recursed until the stack overflowed (RangeError)', () => {
    expect(() => parseConfig('limits: &l\n  - { name: a, purpose: shedding, limit: 3, window: 1m, key: ip, reason: *l }\nroutes: []\n', { file: 'c.yaml' })).toThrow(
      new ConfigFileError('RC_CONFIG_SYNTAX', 'c.yaml', '', 'line 2, column 74: an alias refers to a collection that contains it, which would make the data endless', { line: 2, column: 74 }),
    );
    expect(() => parseRlsConfig([{ file: 'r.yaml', text: 'domain: a\ndescriptors: &d\n  - key: k\n    descriptors: *d\n' }])).toThrow('r.yaml: line 4, column 18: an alias refers to a collection that contains it');
    // An alias to an earlier, finished node is fine.
    expect(parseRlsConfig([{ file: 'r.yaml', text: 'domain: a\ndescriptors:\n  - &k { key: k, rate_limit: { unit: second, requests_per_unit: 1 } }\n  - { key: j, rate_limit: { unit: second, requests_per_unit: 2 } }\n' }]).rules).toHaveLength(2);
  });

  it('an rls file past yaml\'s alias bound (a billion-laughs document) is a ConfigFileError; before, yaml\'s ReferenceError escaped', () => {
    const bomb = 'a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n';
    const parse = (): unknown => parseRlsConfig([{ file: 'r.yaml', text: bomb }]);
    expect(parse).toThrow(ConfigFileError);
    expect(parse).toThrow('r.yaml: Excessive alias count indicates a resource exhaustion attack');
  });

  it('an rls rule the library cannot run is refused at load naming the rule; before, audit passed it and rls failed at startup with "limits[0].limit: ..."', () => {
    const text = 'domain: messaging\ndescriptors:\n  - key: to_number\n    rate_limit: { unit: day, requests_per_unit: 4294967295, algorithm: sliding-log }\n';
    const parse = (): unknown => parseRlsConfig([{ file: 'r.yaml', text }]);
    expect(parse).toThrow(ConfigFileError);
    expect(parse).toThrow(/^r\.yaml: descriptors\[0\]\.rate_limit\.requests_per_unit: sliding-log keeps up to min\(limit, window in ms\) = 86400000 log entries per key, .* \(line 4, column 49\)$/);
  });

  it('the alias-cycle check is not quadratic: 8 times the aliases cost under 40 times the time (best of 3; measured 6 to 19, quadratic is 64); the first version resolved each alias by scanning the document', () => {
    // A ratio of two timings of the same process, not a threshold: a loaded host slows both alike.
    const doc = (n: number): string => `a: &a [x, y]\nb: [${Array.from({ length: n }, () => '*a').join(', ')}]\n`;
    const bestOf3 = (parse: () => unknown): number => {
      let best = Infinity;
      for (let i = 0; i < 3; i++) {
        const start = performance.now();
        try {
          parse();
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigFileError);
        }
        best = Math.min(best, performance.now() - start);
      }
      return best;
    };
    const small = doc(2000);
    const large = doc(16000);
    for (const parse of [(text: string) => parseConfig(text, { file: 'c.yaml' }), (text: string) => parseRlsConfig([{ file: 'r.yaml', text }])]) {
      bestOf3(() => parse(large)); // warm up
      const ratio = bestOf3(() => parse(large)) / Math.max(bestOf3(() => parse(small)), 0.5);
      expect(ratio).toBeLessThan(40);
    }
  });

  it('an algorithm given as a mapping (with a toString key) is RC_UNKNOWN_ALGORITHM; before, it threw "Cannot convert object to primitive value"', () => {
    const text = 'limits:\n  - { name: a, purpose: shedding, algorithm: { toString: token-bucket }, limit: 3, window: 1m, key: ip }\nroutes:\n  - { match: GET /a, limits: [a] }\n';
    expect(() => parseConfig(text, { file: 'c.yaml' })).toThrow(/^c\.yaml: limits\[0\]\.algorithm: unknown algorithm \{"toString":"token-bucket"\}; expected one of /);
  });
});
