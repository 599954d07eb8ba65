import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { auditContract } from '../../../packages/cli/src/contract/audit.js';
import { buildRuntime, parseConfig } from '../../../packages/ratecontract/src/config/index.js';
import { ManualClock } from '../../../packages/ratecontract/src/index.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const ALGOS = ['gcra', 'token-bucket', 'leaky-bucket', 'sliding-log', 'fixed-window'] as const;
const BUCKETS = new Set(['gcra', 'token-bucket', 'leaky-bucket']);

const limitArb = fc.record({
  algorithm: fc.constantFrom(...ALGOS),
  limit: fc.integer({ min: 1, max: 6 }),
  windowMs: fc.constantFrom(1000, 2000, 3000, 6000),
  burst: fc.integer({ min: 1, max: 8 }),
  global: fc.boolean(),
});

function yaml(name: string, l: { algorithm: string; limit: number; windowMs: number; burst: number; global: boolean }): string {
  const burst = BUCKETS.has(l.algorithm) ? `, burst: ${l.burst}` : '';
  return `  - { name: ${name}, purpose: shedding, algorithm: ${l.algorithm}, limit: ${l.limit}, window: ${l.windowMs}${burst}, key: ${l.global ? 'global' : 'ip'}, reason: r }\n`;
}

describe('RC_AUDIT_NEVER_TRIPS is never a false alarm', () => {
  it('whenever audit says a limit can never trip, traffic never finds a request only it rejects', async () => {
    let claimed = 0;
    await fc.assert(
      fc.asyncProperty(
        limitArb,
        limitArb,
        fc.array(fc.integer({ min: 0, max: 1500 }), { minLength: 1, maxLength: 120 }),
        async (a, b, gaps) => {
          const text = `limits:\n${yaml('a', a)}${yaml('b', b)}routes:\n  - { match: GET /x, limits: [a, b] }\n`;
          const config = parseConfig(text, { file: 'p.yaml' });
          const finding = auditContract(config).findings.find((f) => f.code === 'RC_AUDIT_NEVER_TRIPS');
          if (finding === undefined) return;
          claimed++;
          const loose = finding.message.startsWith('a ') ? 0 : 1;
          const clock = new ManualClock(1_000_000);
          const rt = await buildRuntime(config, { clock });
          try {
            const limiter = rt.route('GET', '/x')?.value.limiter;
            for (const gap of gaps) {
              clock.advance(gap);
              const d = await limiter?.check({ ip: '192.0.2.1' });
              const looseResult = d?.results[loose];
              const strictResult = d?.results[1 - loose];
              expect(strictResult?.allowed === true && looseResult?.allowed === false, `${finding.message} at ${clock.now()}`).toBe(false);
            }
          } finally {
            await rt.close();
          }
        },
      ),
      fcBudget({ runs: 300 }),
    );
    expect(claimed).toBeGreaterThan(10);
  });
});
