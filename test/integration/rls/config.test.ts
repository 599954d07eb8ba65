/**
 * The rls config loader and matcher, without a process: the reference's
 * refusals with the file and path, our extensions, and the matching
 * semantics as properties.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRlsConfig } from '../../../packages/cli/src/rls/config.js';
import { matchRequest, wildcardMatch } from '../../../packages/cli/src/rls/match.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const load = (text: string, file = 'x.yaml') => parseRlsConfig([{ file, text }]);
const refusal = (text: string): string => {
  try {
    load(text);
  } catch (error) {
    return (error as Error).message;
  }
  return '(accepted)';
};

describe('rls config', () => {
  it.each([
    ['domain: ""\n', 'x.yaml: domain: config file cannot have an empty domain'],
    ['domain: a\ndescriptors:\n  - value: v\n', 'x.yaml: descriptors[0].key: descriptor has an empty key'],
    ['domain: a\ndescriptors:\n  - key: k\n  - key: k\n', 'x.yaml: descriptors[1]: duplicate descriptor composite key "a.k"'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight }\n', 'invalid rate limit unit "fortnight"'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true, unit: second }\n', 'descriptors[0].rate_limit.unit: should not be given with unlimited: true'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, name: n, replaces: [{ name: n }] }\n', 'replaces[0].name: should not name its own rule'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limt: {}\n', 'descriptors[0].rate_limt: unknown option "rate_limt"'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, algoritm: gcra }\n', 'unknown option "algoritm"'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, algorithm: concurrency }\n', 'rate_limit.algorithm: must be one of'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, burst: 3 }\n', 'only token-bucket, leaky-bucket and gcra have a burst'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, purpose: abuse, onError: open }\n', 'needs acknowledgeFailOpen'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, onError: open, failClosedAfter: 1s }\n', 'failClosedAfter: applies to onError: closed only'],
    ['domain: a\ndescriptors:\n  - key: k\n    share_threshold: true\n', 'only applies to a wildcard value'],
    ['domain: a\ndescriptors:\n  - key: k\n    quota_mode: true\n', 'quota_mode: is not supported'],
    ['domain: a\ndescriptors: [1]\n', 'descriptors[0]: must be a map'],
  ])('refuses %j', (text, message) => {
    expect(refusal(text)).toContain(message);
  });

  it('names the line of the offending value', () => {
    expect(refusal('domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: weeks\n')).toMatch(/\(line 5, column \d+\)$/);
  });

  it('refuses a domain defined by two files', () => {
    expect(() => parseRlsConfig([{ file: 'a.yaml', text: 'domain: d\n' }, { file: 'b.yaml', text: 'domain: d\n' }])).toThrow('b.yaml: domain: duplicate domain "d"');
  });

  it('reads units case-insensitively, week to year included', () => {
    const c = load('domain: a\ndescriptors:\n  - key: w\n    rate_limit: { unit: WEEK, requests_per_unit: 1 }\n  - key: y\n    rate_limit: { unit: Year, requests_per_unit: 1 }\n');
    expect(c.rules.map((r) => r.unit)).toEqual(['week', 'year']);
  });
});

describe('wildcardMatch', () => {
  it('is the regular expression with each * as .* (anchored)', () => {
    const part = fc.stringMatching(/^[ab/]{0,3}$/);
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 4 }), fc.stringMatching(/^[ab/]{0,8}$/), (parts, value) => {
        const re = new RegExp(`^${parts.map((p) => p.replace(/[/]/g, '\\/')).join('.*')}$`);
        expect(wildcardMatch(parts, value)).toBe(re.test(value));
      }),
      fcBudget({ runs: 500, ms: 2000 }),
    );
  });
});

describe('matching', () => {
  const config = load(`
domain: d
descriptors:
  - key: a
    rate_limit: { unit: hour, requests_per_unit: 1 }
    descriptors:
      - key: b
        rate_limit: { unit: hour, requests_per_unit: 2 }
        descriptors:
          - key: c
            rate_limit: { unit: hour, requests_per_unit: 3 }
  - key: a
    value: special
    rate_limit: { unit: hour, requests_per_unit: 9 }
`);

  it('a descriptor of N entries matches the rule at depth N and no other; key and value beat key alone', () => {
    const keys = ['a', 'b', 'c', 'z'];
    fc.assert(
      fc.property(fc.array(fc.record({ key: fc.constantFrom(...keys), value: fc.constantFrom('x', 'special') }), { maxLength: 5 }), (entries) => {
        const m = matchRequest(config, 'd', entries);
        const path = ['a', 'b', 'c'];
        const onPath = entries.length >= 1 && entries.length <= 3 && entries.every((e, i) => e.key === path[i]);
        // a=special is its own leaf: it wins at depth 1, and a deeper descriptor through it matches nothing.
        const special = entries[0]?.key === 'a' && entries[0].value === 'special';
        if (!onPath || (special && entries.length > 1)) {
          expect(m).toBeUndefined();
          return;
        }
        expect(m?.rule.requestsPerUnit).toBe(special ? 9 : entries.length);
      }),
      fcBudget({ runs: 500, ms: 2000 }),
    );
  });

  it('an unknown domain matches nothing', () => {
    expect(matchRequest(config, 'other', [{ key: 'a', value: 'x' }])).toBeUndefined();
  });
});

describe('audit --rls', () => {
  it('flags a rule without purpose, a replaces to no rule and a block; a stated rule gets only the info findings', async () => {
    const { auditRls } = await import('../../../packages/cli/src/rls/audit.js');
    const audit = auditRls(
      load(`
domain: d
descriptors:
  - key: plain
    rate_limit: { unit: hour, requests_per_unit: 5 }
  - key: stated
    rate_limit: { unit: hour, requests_per_unit: 5, purpose: abuse, reason: credential stuffing }
  - key: block
    rate_limit: { unit: hour, requests_per_unit: 0, replaces: [{ name: ghost }] }
  - key: free
    rate_limit: { unlimited: true }
`),
    );
    expect(audit.findings.map((f) => [f.code, f.subject])).toEqual([
      ['RLS_MISSING_PURPOSE', 'x.yaml: d.plain'],
      ['RLS_DEFAULT_FAIL_MODE', 'x.yaml: d.stated'],
      ['RLS_BLOCKED', 'x.yaml: d.block'],
      ['RLS_REPLACES_UNKNOWN', 'x.yaml: d.block'],
    ]);
    expect(audit.rules.find((r) => r.path === 'd.stated')).toMatchObject({ purpose: 'abuse', onError: 'closed' });
  });
});
