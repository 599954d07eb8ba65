/**
 * bench/trace.js, the Cloudflare-shaped trace the sliding window's
 * precision is measured on (docs/algorithms.md): deterministic, source by
 * source, heavy-tailed, about 39 requests per source on average (10.5
 * million from 270,000). Checked on the first 20,000 sources, which have
 * the same distribution as the rest.
 */
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JavaScript module of the bench package, without types
import { CLOUDFLARE_SHAPE, forEachSource, sourceArrivals } from '../../../bench/trace.js';

interface Shape {
  readonly sources: number;
  readonly durationMs: number;
}
const shape = { ...(CLOUDFLARE_SHAPE as Shape), sources: 20_000 };

describe('bench/trace.js', () => {
  it('has Cloudflare\'s 270,000 sources by default', () => {
    expect((CLOUDFLARE_SHAPE as Shape).sources).toBe(270_000);
  });

  it('is deterministic, in time order within the hour, and heavy-tailed', () => {
    const counts: number[] = [];
    let disorder = 0;
    const total = (forEachSource as (f: (i: number, t: number[]) => void, s: Shape) => number)((_i, times) => {
      for (let j = 1; j < times.length; j++) if ((times[j] as number) < (times[j - 1] as number)) disorder++;
      if (times.length > 0 && (times[times.length - 1] as number) >= shape.durationMs) disorder++;
      counts.push(times.length);
    }, shape);
    expect(disorder).toBe(0);
    expect(total / shape.sources).toBeGreaterThan(30);
    expect(total / shape.sources).toBeLessThan(50);
    counts.sort((a, b) => b - a);
    const top1 = counts.slice(0, shape.sources / 100).reduce((a, b) => a + b, 0);
    // The heaviest 1% of sources send a third or more of the requests; the median source a dozen or so.
    expect(top1 / total).toBeGreaterThan(0.3);
    expect(counts[shape.sources / 2]).toBeLessThan(30);
    const again: number[] = [];
    (sourceArrivals as (i: number, emit: (t: number) => void, s: Shape) => number)(7, (t) => again.push(t), shape);
    const first: number[] = [];
    (sourceArrivals as (i: number, emit: (t: number) => void, s: Shape) => number)(7, (t) => first.push(t), shape);
    expect(again).toEqual(first);
  });
});
