/**
 * What each defect the fuzzers found now does, stated exactly (the corpus's
 * regress-*.txt files hold the inputs; this file holds the answers).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveIpOptions } from './subjects.js';

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
});
