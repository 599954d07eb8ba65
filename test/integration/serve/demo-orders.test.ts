/**
 * The demo's printed examples run in other orders than printed, each order on
 * a fresh `ratecontract serve`: every example must show what its caption says
 * whichever ran before it (they once shared 127.0.0.1's per-address burst,
 * so the tenant example's 429 came from otp-ip on its 3rd request).
 * quick-start.test.ts runs them in the printed order through `npm run serve`.
 */
import { describe, expect, it } from 'vitest';
import { printedExamples, runAndCheck, type PrintedExample } from './demo-examples.js';
import { serve } from './helpers.js';

/** Indexes into the printed examples, [429, tenant 429, 503, health] as printed. */
const ORDERS: ReadonlyArray<readonly number[]> = [
  [3, 2, 1, 0],
  [1, 0, 2, 3],
  [2, 0, 3, 1],
];

describe('the demo examples in any order', () => {
  it.each(ORDERS)('order %j', async (...order: number[]) => {
    const s = await serve(['--port', '0', '--admin-port', '0']);
    let code: number | null = null;
    try {
      const examples: PrintedExample[] = printedExamples(s.stderr());
      expect(examples.map((e) => e.caption.split(' ')[0])).toEqual(['429:', '429', '503:', 'GET']);
      await runAndCheck(examples, order);
    } finally {
      code = await s.stop();
    }
    expect(code).toBe(0);
  });
});
