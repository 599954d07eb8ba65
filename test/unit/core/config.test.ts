import { describe, expect, it } from 'vitest';
import { ConfigError, createLimiter, memoryStore, type LimitDefinition } from '../../../packages/ratecontract/src/index.js';

const base: LimitDefinition = { name: 'login', purpose: 'abuse', algorithm: 'gcra', limit: 5, window: '15m', key: 'principal' };

function configError(make: () => unknown): ConfigError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

function invalid(def: Record<string, unknown>): ConfigError {
  return configError(() => createLimiter({ limits: [def as unknown as LimitDefinition] }));
}

describe('createLimiter rejects invalid definitions at construction', () => {
  it.each([
    ['missing purpose', { ...base, purpose: undefined }, 'RC_MISSING_PURPOSE', 'limits[0].purpose'],
    ['unknown purpose', { ...base, purpose: 'security' }, 'RC_INVALID_PURPOSE', 'limits[0].purpose'],
    ['zero limit', { ...base, limit: 0 }, 'RC_INVALID_LIMIT', 'limits[0].limit'],
    ['negative limit', { ...base, limit: -3 }, 'RC_INVALID_LIMIT', 'limits[0].limit'],
    ['fractional limit', { ...base, limit: 2.5 }, 'RC_INVALID_LIMIT', 'limits[0].limit'],
    ['zero window', { ...base, window: 0 }, 'RC_INVALID_WINDOW', 'limits[0].window'],
    ['negative window', { ...base, window: -1000 }, 'RC_INVALID_WINDOW', 'limits[0].window'],
    ['unparseable window', { ...base, window: '15 minutes' }, 'RC_INVALID_WINDOW', 'limits[0].window'],
    ['unknown algorithm', { ...base, algorithm: 'magic-bucket' }, 'RC_UNKNOWN_ALGORITHM', 'limits[0].algorithm'],
    ['burst below cost', { ...base, burst: 2, cost: 3 }, 'RC_BURST_BELOW_COST', 'limits[0].burst'],
    ['limit below cost (window algorithm)', { ...base, algorithm: 'fixed-window', limit: 2, cost: 3 }, 'RC_BURST_BELOW_COST', 'limits[0].limit'],
    ['burst on a window algorithm', { ...base, algorithm: 'sliding-log', burst: 3 }, 'RC_INVALID_BURST', 'limits[0].burst'],
    ['zero burst', { ...base, burst: 0 }, 'RC_INVALID_BURST', 'limits[0].burst'],
    ['open abuse limit without acknowledgement', { ...base, onError: 'open' }, 'RC_FAIL_OPEN_UNACKNOWLEDGED', 'limits[0].acknowledgeFailOpen'],
    ['open abuse limit with blank acknowledgement', { ...base, onError: 'open', acknowledgeFailOpen: '  ' }, 'RC_FAIL_OPEN_UNACKNOWLEDGED', 'limits[0].acknowledgeFailOpen'],
    ['unknown onError', { ...base, onError: 'ignore' }, 'RC_INVALID_OPTION', 'limits[0].onError'],
    ['failClosedAfter on a degraded limit', { ...base, onError: 'degraded', failClosedAfter: '5s' }, 'RC_INVALID_OPTION', 'limits[0].failClosedAfter'],
    ['failClosedAfter on a shedding limit (degraded by default)', { ...base, purpose: 'shedding', failClosedAfter: 0 }, 'RC_INVALID_OPTION', 'limits[0].failClosedAfter'],
    ['bad name', { ...base, name: 'Login Limit' }, 'RC_INVALID_NAME', 'limits[0].name'],
    ['unknown key extractor', { ...base, key: 'cookie.sid' }, 'RC_INVALID_KEY', 'limits[0].key'],
    ['unknown store', { ...base, store: 'auth' }, 'RC_UNKNOWN_STORE', 'limits[0].store'],
    ['misspelt option', { ...base, onerror: 'closed' }, 'RC_INVALID_OPTION', 'limits[0].onerror'],
    ['mode on a non-leaky algorithm', { ...base, mode: 'queue' }, 'RC_INVALID_OPTION', 'limits[0].mode'],
    ['status other than 429/503', { ...base, status: 500 }, 'RC_INVALID_OPTION', 'limits[0].status'],
    ['window too large for exact arithmetic', { ...base, limit: 1_000_000_000, window: '1000d' }, 'RC_INVALID_WINDOW', 'limits[0].window'],
  ])('%s', (_label, def, code, option) => {
    const error = invalid(def);
    expect(error.code).toBe(code);
    expect(error.option).toBe(option);
    expect(error.message).toContain(option);
  });

  it('names the duplicate', () => {
    const error = configError(() => createLimiter({ limits: [base, { ...base }] }));
    expect(error.code).toBe('RC_DUPLICATE_NAME');
    expect(error.option).toBe('limits[1].name');
    expect(error.message).toContain('"login"');
  });

  it('rejects an empty chain and a bad replica count', () => {
    expect(configError(() => createLimiter({ limits: [] })).option).toBe('limits');
    expect(configError(() => createLimiter({ limits: [base], replicas: 0 })).option).toBe('replicas');
  });

  it('rejects a bad memory store bound', () => {
    expect(configError(() => memoryStore({ maxKeys: -1 })).option).toBe('memoryStore.maxKeys');
  });

  it('accepts an acknowledged fail-open abuse limit and applies purpose defaults', () => {
    const limiter = createLimiter({
      limits: [
        { ...base, onError: 'open', acknowledgeFailOpen: 'the IdP has its own lockout' },
        { name: 'search', purpose: 'shedding', limit: 100, window: '1s', key: 'global' },
        { name: 'otp', purpose: 'abuse', limit: 3, window: '15m', key: 'body.phone' },
      ],
    });
    expect(limiter.limits.map((l) => [l.name, l.onError, l.algorithm, l.status])).toEqual([
      ['login', 'open', 'gcra', 429],
      ['search', 'degraded', 'gcra', 503],
      ['otp', 'closed', 'gcra', 429],
    ]);
    expect(limiter.limits[2]?.params).toEqual({ limit: 3, windowMs: 900_000, burst: 3, queue: false });
  });

  it('parses every duration form', () => {
    const windows = ['500ms', '60s', '15m', '1h', '1d', 2500] as const;
    const limiter = createLimiter({
      limits: windows.map((window, i) => ({ name: `w${i}`, purpose: 'shedding' as const, limit: 1, window, key: 'global' as const })),
    });
    expect(limiter.limits.map((l) => l.params.windowMs)).toEqual([500, 60_000, 900_000, 3_600_000, 86_400_000, 2500]);
  });
});
