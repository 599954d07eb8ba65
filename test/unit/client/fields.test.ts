import { describe, expect, it } from 'vitest';
import { parsePolicy, parseRateLimit, safeRate } from '../../../packages/ratecontract/src/client/index.js';

describe('parseRateLimit', () => {
  it('reads draft-10 items: name, r, t, pk', () => {
    expect(parseRateLimit('"default";r=50;t=30')).toEqual([{ name: 'default', pk: undefined, r: 50, t: 30 }]);
    expect(parseRateLimit('"default";r=999;pk=:dHJpYWwxMjEzMjM=:')).toEqual([{ name: 'default', pk: 'dHJpYWwxMjEzMjM=', r: 999, t: undefined }]);
    expect(parseRateLimit('"hour";r=10;t=100, "day";r=0;t=3600')).toEqual([
      { name: 'hour', pk: undefined, r: 10, t: 100 },
      { name: 'day', pk: undefined, r: 0, t: 3600 },
    ]);
  });

  it('accepts a Token name and the renames in flight (a for r, w for t)', () => {
    expect(parseRateLimit('quota;t=1;r=0')).toEqual([{ name: 'quota', pk: undefined, r: 0, t: 1 }]);
    expect(parseRateLimit('"default";a=7;w=9')).toEqual([{ name: 'default', pk: undefined, r: 7, t: 9 }]);
  });

  it('reads the draft-7 dictionary as one unnamed limit', () => {
    expect(parseRateLimit('limit=100, remaining=50, reset=30')).toEqual([{ name: '', pk: undefined, r: 50, t: 30 }]);
  });

  it('ignores a malformed field as a whole', () => {
    for (const bad of ['"a";t=3', '"a";r=-1', '"a";r=1.5', '"a";r=1, "b";t=2', '"a";r=1;pk="text"', '("a" "b");r=1', '"a";r=1;;', 'limit=100', '', '"a";r="5"']) {
      expect(parseRateLimit(bad), bad).toBeUndefined();
    }
    expect(parseRateLimit(null)).toBeUndefined();
  });
});

describe('parsePolicy', () => {
  it('reads draft-10 policies and draft-7 integer items', () => {
    expect(parsePolicy('"burst";q=100;w=60,"daily";q=1000;w=86400')).toEqual([
      { name: 'burst', pk: undefined, q: 100, w: 60, qu: undefined },
      { name: 'daily', pk: undefined, q: 1000, w: 86400, qu: undefined },
    ]);
    expect(parsePolicy('"peruser";q=65535;qu="content-bytes";w=10')).toEqual([{ name: 'peruser', pk: undefined, q: 65535, w: 10, qu: 'content-bytes' }]);
    expect(parsePolicy('100;w=60')).toEqual([{ name: '', pk: undefined, q: 100, w: 60, qu: undefined }]);
  });

  it('ignores a malformed policy field', () => {
    for (const bad of ['"a";w=60', '"a";q=10;w=0', '"a";q=10;qu=requests', '"a";q=-1', 'x=1']) expect(parsePolicy(bad), bad).toBeUndefined();
  });
});

describe('safeRate', () => {
  it("is min(r/t, q/w): the draft's example is 10 per second, not the naive 1000", () => {
    expect(safeRate({ r: 10_000, t: 10 }, undefined)).toBe(1000);
    expect(safeRate({ r: 10_000, t: 10 }, { q: 10_000, w: 1000 })).toBe(10);
    expect(safeRate({ r: 1, t: 10 }, { q: 100, w: 10 })).toBe(0.1);
    expect(safeRate({ r: 5, t: undefined }, undefined)).toBe(Infinity);
  });
});
