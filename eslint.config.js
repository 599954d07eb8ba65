// @ts-check
import tseslint from 'typescript-eslint';

import { dirname, relative, resolve, sep } from 'node:path';

/**
 * Layers as an allow-list: every folder of both packages' src/ names the
 * folders it may import (docs/api.md, Layers). Same-folder imports are
 * always fine; anything else, or a folder with no entry here, fails lint.
 * The library (packages/ratecontract) never imports the servers and tools
 * (@ratecontract/cli) nor its own public entries ('ratecontract',
 * 'ratecontract/...': a module imports the defining module instead); the
 * servers and tools reach the library through its entries only.
 */
const LIB = 'packages/ratecontract/src';
const CLI = 'packages/cli/src';
const ROOT_FILES = ['index.ts', 'limiter.ts', 'internal.ts'];
const LAYERS = {
  [LIB]: {
    algorithms: [],
    core: ['algorithms'],
    stores: ['algorithms', 'core'],
    http: ['core'],
    adapters: ['core', 'http'],
    client: ['core'],
    metrics: ['core'],
    testing: ['algorithms', 'core'],
    // The contract file's runtime builds limiters and stores: the composition root (limiter.ts) wires the memory store.
    config: ['core', 'http', 'stores', 'limiter.ts'],
    // The composition root and the entries (index.ts, limiter.ts, internal.ts) may import every library folder.
    '.': ['algorithms', 'core', 'stores', 'http', 'adapters', 'client', 'config', 'metrics', 'testing', ...ROOT_FILES],
  },
  [CLI]: {
    contract: [],
    host: [],
    rls: ['contract', 'host'],
    serve: ['contract', 'host'],
    // decide answers forward-auth subrequests with serve's generation (guards, identity), server options and client-error answers.
    decide: ['contract', 'host', 'serve'],
    cli: ['contract', 'decide', 'host', 'rls', 'serve'],
  },
};

/**
 * The `node:` modules each part of the library may import (docs/runtimes.md).
 * The parts that run off Node (core, algorithms, the memory store, http, the
 * Hono adapter, the client, testing) import only what Bun, Deno and workerd
 * (with nodejs_compat) all provide: crypto, diagnostics_channel, net. The
 * longest matching path wins; a library file under no entry may import no
 * `node:` module. test/integration/runtimes runs those parts on each runtime.
 */
const NODE_IMPORTS = {
  algorithms: [],
  core: ['crypto', 'diagnostics_channel', 'net'],
  // The 'event-loop-delay' shedder driver: Node, Bun and Deno (docs/runtimes.md); workerd before 2025 has no node:perf_hooks.
  'core/shedder.ts': ['perf_hooks'],
  'stores/memory': ['crypto'],
  'stores/redis': ['crypto'],
  'stores/redis-http': [],
  // The PostgreSQL quota store: Node (its pool is pg's), key digests.
  'stores/pg': ['crypto'],
  http: ['crypto', 'net'],
  // The Node adapters' half of http: Node's own server objects.
  'http/node-connection.ts': ['http', 'net'],
  'adapters/hono': [],
  'adapters/node': ['http', 'net'],
  'adapters/express': ['http', 'net'],
  'adapters/fastify': ['http', 'net'],
  client: ['diagnostics_channel'],
  testing: [],
  // Node-only parts: the contract file (reads files) and the metrics exporters.
  config: ['crypto', 'fs', 'fs/promises', 'module', 'path'],
  metrics: ['diagnostics_channel', 'module'],
  'index.ts': [],
  'limiter.ts': [],
  'internal.ts': [],
};

/** NODE_IMPORTS' entry for a library file (its path under the library's src/), or undefined outside the library. */
function nodeImportsOf(absolute) {
  const rel = relative(import.meta.dirname, absolute).split(sep).join('/');
  if (!rel.startsWith(`${LIB}/`)) return undefined;
  const path = rel.slice(LIB.length + 1);
  let best;
  for (const key of Object.keys(NODE_IMPORTS)) {
    if ((path === key || path.startsWith(`${key}/`)) && (best === undefined || key.length > best.length)) best = key;
  }
  return { path, key: best, allowed: best === undefined ? [] : NODE_IMPORTS[best] };
}

/** Where a path lies: [package src dir, folder or root file name], or undefined outside both src/ trees. */
function placeOf(absolute) {
  const rel = relative(import.meta.dirname, absolute).split(sep).join('/');
  for (const src of [LIB, CLI]) {
    if (!rel.startsWith(`${src}/`)) continue;
    const rest = rel.slice(src.length + 1).split('/');
    return rest.length === 1 ? [src, rest[0].replace(/\.js$/, '.ts')] : [src, rest[0]];
  }
  return undefined;
}

const layersPlugin = {
  rules: {
    'node-imports': {
      meta: { type: 'problem', schema: [] },
      create(context) {
        const here = nodeImportsOf(context.filename);
        if (here === undefined) return {};
        function check(node) {
          if (node.source == null || node.source.type !== 'Literal' || typeof node.source.value !== 'string') return;
          const spec = node.source.value;
          const builtin = spec.startsWith('node:') ? spec.slice(5) : ['crypto', 'net', 'http', 'fs', 'fs/promises', 'path', 'module', 'diagnostics_channel', 'perf_hooks', 'os', 'url', 'util', 'events', 'stream', 'child_process', 'worker_threads', 'async_hooks', 'timers', 'buffer', 'process'].includes(spec) ? spec : undefined;
          if (builtin === undefined) return;
          if (!spec.startsWith('node:')) return context.report({ node: node.source, message: `import '${spec}' as 'node:${spec}'.` });
          if (here.allowed.includes(builtin)) return;
          context.report({
            node: node.source,
            message: `${LIB}/${here.path} may import ${here.allowed.length === 0 ? 'no node: module' : here.allowed.map((m) => `node:${m}`).join(', ')}; not ${spec} (eslint.config.js NODE_IMPORTS, docs/runtimes.md: this part runs on Bun, Deno and workerd too).`,
          });
        }
        return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
      },
    },
    'allowed-imports': {
      meta: { type: 'problem', schema: [] },
      create(context) {
        const here = placeOf(context.filename);
        if (here === undefined) return {};
        const [src, folder] = here;
        const table = LAYERS[src];
        const key = src === LIB && ROOT_FILES.includes(folder) ? '.' : folder;
        const allowed = table[key];
        function check(node) {
          if (node.source == null || node.source.type !== 'Literal' || typeof node.source.value !== 'string') return;
          const spec = node.source.value;
          const report = (message) => context.report({ node: node.source, message });
          if (allowed === undefined) return report(`${src}/${folder} has no entry in the layer allow-list (eslint.config.js, LAYERS): add one, and to docs/api.md, Layers.`);
          if (src === LIB && /^@ratecontract\//.test(spec)) return report('the library (packages/ratecontract) never imports the servers and tools (@ratecontract/cli).');
          if (src === LIB && /^ratecontract(\/|$)/.test(spec)) return report(`a library module imports the defining module, never the public entry '${spec}'.`);
          if (!spec.startsWith('.')) return;
          const target = placeOf(resolve(dirname(context.filename), spec));
          if (target === undefined) return report(`'${spec}' lies outside ${src}: ${src === CLI ? "the servers and tools reach the library through its entries ('ratecontract', 'ratecontract/...')" : 'the library imports its own src/ only'}.`);
          const [tsrc, tfolder] = target;
          if (tsrc !== src) return report(src === LIB ? 'the library (packages/ratecontract) never imports the servers and tools (packages/cli).' : "the servers and tools reach the library through its entries ('ratecontract', 'ratecontract/...'), never its source.");
          if (tfolder === folder) return;
          if (!allowed.includes(tfolder)) {
            report(`layers: ${src}/${folder} may import ${allowed.length === 0 ? 'no other folder' : allowed.join(', ')}; not ${tfolder} (eslint.config.js LAYERS, docs/api.md Layers).`);
          }
        }
        return {
          ImportDeclaration: check,
          ExportNamedDeclaration: check,
          ExportAllDeclaration: check,
          ImportExpression: check,
        };
      },
    },
  },
};

export default tseslint.config(
  // test/integration/types/consumer is compiled against the packed tarball by test/integration/types/packed.test.ts, not by this project.
  { ignores: ['**/dist/**', 'bench/**', 'node_modules/**', 'coverage/**', 'examples/**', 'test/integration/types/consumer/**'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A floating promise in a limiter is a limit silently not enforced.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['packages/*/src/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', { selector: 'ExportDefaultDeclaration', message: 'Named exports only.' }],
    },
  },
  // Layers: each folder's allow-list (LAYERS above; docs/api.md, Layers), and the node: modules each part may import (NODE_IMPORTS). An import outside them fails lint.
  {
    files: ['packages/*/src/**/*.ts'],
    plugins: { layers: layersPlugin },
    rules: { 'layers/allowed-imports': 'error', 'layers/node-imports': 'error' },
  },
  {
    // Unit tests run without Redis: only test/integration, test/smoke (its one Redis smoke test), test/faults and test/load may start redis-server or talk to it.
    files: ['test/**/*.ts'],
    ignores: ['test/integration/**', 'test/smoke/**', 'test/faults/**', 'test/load/**', 'test/browser/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'ioredis', message: 'Unit tests run without Redis: a test that needs a Redis client belongs under test/integration/redis (or test/smoke, test/faults, test/load).' },
            { name: 'redis', message: 'Unit tests run without Redis: a test that needs a Redis client belongs under test/integration/redis (or test/smoke, test/faults, test/load).' },
          ],
          patterns: [
            {
              group: ['**/redis/helpers/*', '**/faults/helpers*', '**/load/fixtures/*'],
              message: 'Unit tests run without Redis: a test that starts redis-server belongs under test/integration/redis (or test/smoke, test/faults, test/load).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
