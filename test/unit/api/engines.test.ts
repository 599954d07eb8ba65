import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

/**
 * The Node versions the package says it runs on, held against what npm
 * installs: a locked package whose `engines.node` leaves out Node 20 is the
 * EBADENGINE warning a clean `npm ci` prints on Node 20 (cookie@2.0.2, under
 * fastify's light-my-request, did; package.json's overrides pin
 * light-my-request 6.6.0, whose cookie 1.x runs on Node 18 and later).
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
interface Locked {
  readonly version?: string;
  readonly dev?: boolean;
  readonly optional?: boolean;
  readonly engines?: { readonly node?: string } | readonly string[];
}
const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, 'utf8')) as { packages: Record<string, Locked> };
const locked = Object.entries(lock.packages)
  .filter(([path]) => path !== '')
  .map(([path, p]) => ({ path, ...p, node: Array.isArray(p.engines) ? undefined : (p.engines as { node?: string } | undefined)?.node }))
  .filter((p): p is typeof p & { node: string } => p.node !== undefined);

describe('engines', () => {
  it('the lock holds packages that state engines (the check is not empty)', () => {
    expect(locked.length).toBeGreaterThan(10);
  });

  it('every locked package, dev dependencies included, can be installed on Node 20', () => {
    const refuse = locked.filter((p) => !semver.intersects(p.node, '^20.0.0')).map((p) => `${p.path}@${p.version ?? '?'} (node ${p.node})`);
    expect(refuse).toEqual([]);
  });

  it.each(['packages/ratecontract', 'packages/cli'])("every runtime dependency of %s runs on every Node that its engines admit", (dir) => {
    const ws = JSON.parse(readFileSync(`${ROOT}${dir}/package.json`, 'utf8')) as { engines: { node: string }; dependencies?: Record<string, string> };
    const deps = Object.keys(ws.dependencies ?? {}).filter((name) => name !== 'ratecontract');
    expect(deps.length).toBeGreaterThan(0);
    const narrower = locked
      .filter((p) => deps.some((name) => p.path === `node_modules/${name}`) && !semver.subset(ws.engines.node, p.node))
      .map((p) => `${p.path}@${p.version ?? '?'} (node ${p.node})`);
    expect(narrower, `${dir}: engines.node is ${ws.engines.node}`).toEqual([]);
  });

  it('the running Node satisfies every installed package (what npm ci checks)', () => {
    const installed = locked.filter((p) => existsSync(`${ROOT}${p.path}/package.json`));
    expect(installed.length).toBeGreaterThan(10);
    const refuse = installed.filter((p) => !semver.satisfies(process.version, p.node)).map((p) => `${p.path} (node ${p.node})`);
    expect(refuse, process.version).toEqual([]);
  });
});
