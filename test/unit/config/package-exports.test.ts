import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
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

describe('package exports', () => {
  it('ratecontract/schema.json and ratecontract/config resolve through exports', async () => {
    const r = await node(`
      import schema from 'ratecontract/schema.json' with { type: 'json' };
      import { readFileSync } from 'node:fs';
      import { parseConfig, buildRuntime } from 'ratecontract/config';
      const config = parseConfig(readFileSync('examples/ratecontract.yaml', 'utf8'), { file: 'demo' });
      const runtime = await buildRuntime(config);
      console.log(JSON.stringify([schema.title, config.routes.length, config.limits.length, typeof runtime.route]));
      await runtime.close();
    `);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual(['ratecontract contract file', 4, 8, 'function']);
  });

  it('the library entries never reach the config module or yaml (arrows point one way)', () => {
    const seen = new Set<string>();
    const external = new Set<string>();
    const walk = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const m of readFileSync(file, 'utf8').matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)) {
        const spec = m[1] as string;
        if (spec.startsWith('.')) walk(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
        else external.add(spec);
      }
    };
    for (const entry of ['index.ts', 'stores/redis/index.ts', 'stores/redis-http/index.ts', 'stores/pg/index.ts', 'adapters/node/index.ts', 'adapters/express/index.ts', 'adapters/fastify/index.ts', 'adapters/hono/index.ts']) walk(`${root}packages/ratecontract/src/${entry}`);
    expect(seen.size).toBeGreaterThan(30);
    expect([...seen].filter((f) => f.includes('/src/config/') || f.includes('/packages/cli/'))).toEqual([]);
    expect(external.has('yaml')).toBe(false);
    // The PostgreSQL store takes your pool: no library module imports pg (an optional peer).
    expect(external.has('pg')).toBe(false);
  });
});
