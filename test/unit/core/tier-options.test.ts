import { describe, expect, it } from 'vitest';
import { ConfigError, createLimiter, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';

const base: LimitDefinition = { name: 'a', purpose: 'abuse', algorithm: 'fixed-window', limit: 100, window: '1m', key: 'principal' };

function refused(def: Partial<LimitDefinition>, replicas: number | 'discover' = 1): ConfigError {
  try {
    void createLimiter({ replicas, limits: [{ ...base, ...def }] }).close();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('accepted');
}

describe('tier option: refused at construction, naming the option', () => {
  it('algorithms without a lease or pre-filter bound', () => {
    for (const algorithm of ['sliding-log', 'leaky-bucket', 'concurrency'] as const) {
      const e = refused({ algorithm, tier: { mode: 'allotment' } });
      expect(e.option).toBe('limits[0].tier');
      expect(e.message).toContain(`not ${algorithm}`);
    }
    expect(refused({ algorithm: 'sliding-log', tier: { mode: 'pre-filter' } }).option).toBe('limits[0].tier');
  });

  it('unknown modes and options, bad numbers, countRejected', () => {
    expect(refused({ tier: { mode: 'local' } as never }).option).toBe('limits[0].tier.mode');
    expect(refused({ tier: { mode: 'allotment', maxAllotments: 3 } as never }).option).toBe('limits[0].tier.maxAllotments');
    expect(refused({ tier: { mode: 'pre-filter', maxAllotment: 3 } as never }).option).toBe('limits[0].tier.maxAllotment');
    expect(refused({ tier: { mode: 'allotment', maxAllotment: 0 } }).option).toBe('limits[0].tier.maxAllotment');
    expect(refused({ tier: { mode: 'allotment', maxAllotment: 101 } }).message).toContain('capacity 100');
    expect(refused({ tier: { mode: 'allotment', allotmentLifetime: '0s' } }).option).toBe('limits[0].tier.allotmentLifetime');
    expect(refused({ tier: { mode: 'pre-filter', maxKeys: -1 } }).option).toBe('limits[0].tier.maxKeys');
    expect(refused({ countRejected: true, tier: { mode: 'allotment' } }).message).toContain('countRejected');
    expect(refused({ tier: 'lease' as never }).option).toBe('limits[0].tier');
  });

  it("the old quota mode name 'lease' is refused at its path, with a hint to 'allotment'", () => {
    const e = refused({ tier: { mode: 'lease' } as never });
    expect(e.option).toBe('limits[0].tier.mode');
    expect(e.message).toContain('did you mean "allotment"?');
    expect(refused({ tier: { mode: 'alotment' } as never }).message).toContain('did you mean "allotment"?');
  });

  it('a tier together with plans (an allotment is spent under one plan\'s figures)', () => {
    for (const mode of ['allotment', 'pre-filter'] as const) {
      const e = refused({ tier: { mode }, plan: 'header.x-plan', plans: { free: {}, pro: { limit: 1000 } } });
      expect(e.option).toBe('limits[0].tier');
      expect(e.message).toContain('plans');
    }
  });

  it('bucket allotments: a configured k, and burst - k x maxAllotment must hold one request', () => {
    const gcra: Partial<LimitDefinition> = { algorithm: 'gcra', burst: 20, tier: { mode: 'allotment', maxAllotment: 5 } };
    expect(refused(gcra, 'discover').message).toContain('replicas');
    const e = refused(gcra, 4);
    expect(e.option).toBe('limits[0].tier.maxAllotment');
    expect(e.message).toContain('4 x 5');
    expect(() => createLimiter({ replicas: 3, limits: [{ ...base, ...gcra }] }).close()).not.toThrow();
  });
});
