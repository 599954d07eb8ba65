import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseSimulateArgs } from '../../src/cli/simulate-command.js';
import { arrivals, simulate } from '../../src/cli/simulate.js';

const run = promisify(execFile);
const bin = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

describe('ratecontract simulate', () => {
  it('with defaults, shows the fixed window admitting 2N around a boundary and every algorithm within its bound', async () => {
    const options = parseSimulateArgs([]);
    expect([options.limit, options.windowMs, options.pattern]).toEqual([100, 60_000, 'boundary']);
    const results = await simulate(options);
    expect(results.map((r) => r.algorithm)).toEqual([
      'fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra', 'concurrency',
    ]);
    const by = Object.fromEntries(results.map((r) => [r.algorithm, r]));
    expect(by['fixed-window']?.maxInWindow).toBe(200);
    expect(by['fixed-window']?.bound).toBe(200);
    expect(by['sliding-log']?.maxInWindow).toBe(100);
    for (const r of results) {
      expect(r.maxInWindow).toBeLessThanOrEqual(r.bound);
      expect(r.admitted + r.rejected).toBe(r.offered);
    }
    // The smoothing algorithms cut the boundary burst roughly in half.
    for (const name of ['sliding-log', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket']) {
      expect(by[name]?.maxInWindow).toBeLessThan(110);
    }
  });

  it('boundary pattern puts N requests on each side of every other window boundary', () => {
    const t = arrivals('boundary', 100, 60_000, 2);
    expect(t.length).toBe(200);
    expect(t.filter((x) => x < 60_000).length).toBe(100);
    expect(Math.min(...t)).toBeGreaterThanOrEqual(59_000);
    expect(Math.max(...t)).toBeLessThan(61_000);
  });

  it('rejects bad flags with a message naming them', () => {
    expect(() => parseSimulateArgs(['--pattern', 'sawtooth'])).toThrow(/--pattern/);
    expect(() => parseSimulateArgs(['--limit', '0'])).toThrow(/--limit/);
    expect(() => parseSimulateArgs(['--algorithms', 'gcra,nope'])).toThrow(/unknown algorithm nope/);
    expect(() => parseSimulateArgs(['--bogus'])).toThrow(/unknown option --bogus/);
  });

  it('the built binary prints the table (npm test builds dist/ first)', async () => {
    expect(existsSync(bin), `${bin} is missing: run npm run build`).toBe(true);
    const { stdout } = await run(process.execPath, [bin, 'simulate'], { timeout: 30_000 });
    expect(stdout).toMatch(/fixed-window\s+1000\s+1000\s+0\s+200\s+200/);
    expect(stdout).toMatch(/sliding-log\s+1000\s+500\s+500\s+100\s+100/);
    const bad = await run(process.execPath, [bin, 'nonsense']).then(
      () => 0,
      (e: { code?: number }) => e.code ?? -1,
    );
    expect(bad).toBe(2);
  });
});
