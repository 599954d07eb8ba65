/** The contract file accepts `keySlots` on a limit and `keySecretEnv` on a Redis store, and refuses bad values by path. */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../packages/ratecontract/src/config/index.js';

const file = (store: string, limit: string): string =>
  `stores:\n  s: { type: redis, url: redis://10.0.0.1:6379${store} }\nlimits:\n  - { name: a, purpose: abuse, limit: 3, window: 15m, key: body.phone, store: s${limit} }\nroutes:\n  - { match: POST /otp, limits: [a] }\n`;

describe('keySlots and keySecretEnv in the contract file', () => {
  it('accepts them and compiles the slot count', () => {
    const c = parseConfig(file(', keySecretEnv: RC_KEY_SECRET', ', keySlots: 65536'), { file: 'x.yaml' });
    expect(c.compiled[0]?.keySlots).toBe(65536);
    expect(c.stores.s).toMatchObject({ type: 'redis', keySecretEnv: 'RC_KEY_SECRET' });
  });

  it('refuses a bad slot count or variable name, naming the path', () => {
    expect(() => parseConfig(file('', ', keySlots: 0'), { file: 'x.yaml' })).toThrow(/limits\[0\]\.keySlots: must be an integer from 1 to 2\^32/);
    expect(() => parseConfig(file(', keySecretEnv: "not a name"', ''), { file: 'x.yaml' })).toThrow(/stores\.s\.keySecretEnv: must be an environment variable name/);
  });
});
