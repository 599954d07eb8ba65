import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs an ES module as a user of the package would import it (self-reference through package.json `exports`; needs `npm run build`). */
function node(source: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--input-type=module', '-e', source], { cwd: root, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

describe('ratecontract/metrics through the package exports', () => {
  it('loads prom-client only when the Prometheus binding is made, and serves the series', async () => {
    const r = await node(`
      import { createRequire } from 'node:module';
      import { createLimiter } from 'ratecontract';
      import { prometheusMetrics, openTelemetryMetrics, SERIES } from 'ratecontract/metrics';
      const require = createRequire(import.meta.url);
      const loaded = () => Object.keys(require.cache).some((k) => k.includes('/prom-client/'));
      const before = loaded();
      const { Registry } = require('prom-client');
      const registry = new Registry();
      const m = prometheusMetrics({ registry });
      const limiter = createLimiter({ limits: [{ name: 'per-ip', purpose: 'shedding', limit: 1, window: '1m', key: 'ip' }] });
      await limiter.check({ ip: '192.0.2.1' });
      await limiter.check({ ip: '192.0.2.1' });
      const text = await registry.metrics();
      m.close();
      console.log(JSON.stringify([before, typeof openTelemetryMetrics, SERIES.decisions, text.includes('ratecontract_decisions_total{limit="per-ip",outcome="rejected"} 1')]));
    `);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual([false, 'function', 'ratecontract_decisions_total', true]);
  });
});
