/**
 * What each defect the fuzzers found now does, stated exactly (the corpus's
 * regress-*.txt files hold the inputs; this file holds the answers).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, ConfigFileError, parseConfig, resolveIpOptions } from './subjects.js';

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
});
