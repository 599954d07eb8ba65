/**
 * The rls config loader and matcher, without a process: the reference's
 * refusals with the file and path, our extensions, and the matching
 * semantics as properties.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRlsConfig } from '../../../packages/cli/src/rls/config.js';
import { matchRequest, wildcardMatch } from '../../../packages/cli/src/rls/descriptor-match.js';
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
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, burst: 3 }\n', 'x.yaml: descriptors[0].rate_limit.burst: does not apply to fixed-window; it applies to token-bucket, leaky-bucket and gcra'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, purpose: abuse, onError: open }\n', 'x.yaml: descriptors[0].rate_limit.acknowledgeFailOpen: limit "a_k" is an abuse limit with onError \'open\''],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, onError: open, failClosedAfter: 1s }\n', 'x.yaml: descriptors[0].rate_limit.failClosedAfter: applies to onError \'closed\' only'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, failClosedAfter: 1s }\n', "failClosedAfter: applies to onError 'closed' only (this limit's is 'degraded', the default for shedding)"],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, purpose: security }\n', 'x.yaml: descriptors[0].rate_limit.purpose: must be \'abuse\' or \'shedding\', got "security"'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, onError: never }\n', 'x.yaml: descriptors[0].rate_limit.onError: must be \'open\', \'degraded\' or \'closed\', got "never"'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, algorithm: gcrq }\n', 'x.yaml: descriptors[0].rate_limit.algorithm: unknown algorithm "gcrq"'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: day, requests_per_unit: 4294967295, algorithm: sliding-log }\n', 'x.yaml: descriptors[0].rate_limit.requests_per_unit: sliding-log keeps up to'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 0, algorithm: token-bucket, burst: 0 }\n', 'x.yaml: descriptors[0].rate_limit.burst: must be a positive integer'],
    ['domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true, purpose: abuse }\n', 'x.yaml: descriptors[0].rate_limit.purpose: does not apply with unlimited: true (the rule never counts)'],
    ['domain: a\ndescriptors:\n  - key: k\n    share_threshold: true\n', 'only applies to a wildcard value'],
    ['domain: a\ndescriptors:\n  - key: k\n    quota_mode: true\n', 'quota_mode: is not supported'],
    ['domain: a\ndescriptors: [1]\n', 'descriptors[0]: must be a map'],
  ])('refuses %j', (text, message) => {
    expect(refusal(text)).toContain(message);
    // Every refusal names the file, the path in it and the line.
    expect(refusal(text)).toMatch(/^x\.yaml: \S+: .* \(line \d+, column \d+\)$/);
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
  it('reports the drop-in default purpose, a replaces to no rule and a block; a stated rule gets the library\'s findings', async () => {
    const { auditRls } = await import('../../../packages/cli/src/rls/rls-audit.js');
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
  - key: closed
    rate_limit: { unit: hour, requests_per_unit: 5, onError: closed }
`),
    );
    expect(audit.findings.map((f) => [f.code, f.severity, f.subject])).toEqual([
      ['RC_AUDIT_DEFAULT_PURPOSE', 'warn', 'x.yaml: d.plain'],
      ['RC_AUDIT_REPLACES_UNKNOWN', 'warn', 'x.yaml: d.block'],
      ['RC_AUDIT_DEFAULT_PURPOSE', 'warn', 'x.yaml: d.closed'],
      ['RC_AUDIT_FIXED_WINDOW_BOUNDARY', 'info', 'x.yaml: d.stated'],
      ['RC_AUDIT_DEFAULT_FAIL_MODE', 'info', 'x.yaml: d.stated'],
      ['RC_AUDIT_BLOCKS_ALL', 'info', 'x.yaml: d.block'],
    ]);
    const defaulted = audit.findings.filter((f) => f.code === 'RC_AUDIT_DEFAULT_PURPOSE').map((f) => f.message);
    // What the default means, with the fail mode the library's compiler gave the rule.
    expect(defaulted[0]).toMatch(/^no purpose: the drop-in default made it a shedding rule, so it fails degraded/);
    expect(defaulted[1]).toMatch(/^no purpose: the drop-in default made it a shedding rule, so it fails closed \(as stated\)/);
    expect(audit.findings.find((f) => f.code === 'RC_AUDIT_DEFAULT_FAIL_MODE')?.message).toBe("onError not stated: closed (the library's default for abuse)");
    expect(audit.rules.find((r) => r.path === 'd.stated')).toMatchObject({ purpose: 'abuse', onError: 'closed' });
    expect(audit.rules.find((r) => r.path === 'd.plain')).toMatchObject({ purpose: 'shedding (not stated)', onError: 'degraded' });
  });

  it('an acknowledged abuse rule that fails open gets the contract audit\'s finding', async () => {
    const { auditRls } = await import('../../../packages/cli/src/rls/rls-audit.js');
    const audit = auditRls(load('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 5, purpose: abuse, onError: open, acknowledgeFailOpen: the IdP locks out, reason: guessing, algorithm: gcra }\n'));
    expect(audit.findings.map((f) => [f.code, f.severity])).toEqual([['RC_AUDIT_ABUSE_FAIL_OPEN', 'warn']]);
  });

  it('a stated rule without reason, in shadow: the contract audit\'s codes and severities', async () => {
    const { auditRls } = await import('../../../packages/cli/src/rls/rls-audit.js');
    const audit = auditRls(load('domain: d\ndescriptors:\n  - key: k\n    shadow_mode: true\n    rate_limit: { unit: hour, requests_per_unit: 5, purpose: shedding, onError: degraded, algorithm: gcra }\n'));
    expect(audit.findings.map((f) => [f.code, f.severity])).toEqual([
      ['RC_AUDIT_NO_REASON', 'warn'],
      ['RC_AUDIT_SHADOW', 'info'],
    ]);
  });
});
