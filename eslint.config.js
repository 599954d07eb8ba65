// @ts-check
import tseslint from 'typescript-eslint';

/** A layer may not import from the layers named in `above` (a folder of src/). */
function layer(files, above) {
  return [
    {
      files: [files],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              ...above.map((dir) => ({
                group: [`**/${dir}/**`, `../${dir}/*`, `../../${dir}/*`],
                message: `layers run algorithms <- core <- stores <- http <- adapters <- cli: this layer may not import from src/${dir}/ (see docs/api.md, Layers).`,
              })),
              ...(files.startsWith('packages/ratecontract/')
                ? [{ group: ['@ratecontract/cli', '@ratecontract/cli/*', '**/packages/cli/**', '**/cli/src/**'], message: 'the library (packages/ratecontract) never imports the servers and tools (packages/cli).' }]
                : []),
            ],
          },
        ],
      },
    },
  ];
}

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
  // Layers: algorithms <- core <- stores <- http <- adapters, with cli on top. The composition root
  // (src/index.ts, src/limiter.ts) wires core to the memory store. An import against the direction fails lint.
  // Every library file (the layers below refine it): never the servers and tools.
  ...layer('packages/ratecontract/src/**/*.ts', []),
  ...layer('packages/ratecontract/src/algorithms/**/*.ts', ['core', 'stores', 'http', 'adapters', 'cli', 'testing']),
  ...layer('packages/ratecontract/src/core/**/*.ts', ['stores', 'http', 'adapters', 'cli', 'testing']),
  ...layer('packages/ratecontract/src/stores/**/*.ts', ['http', 'adapters', 'cli', 'testing']),
  ...layer('packages/ratecontract/src/http/**/*.ts', ['stores', 'adapters', 'cli', 'testing']),
  ...layer('packages/ratecontract/src/adapters/**/*.ts', ['stores', 'cli', 'testing']),
  // The polite client sits on core only (it shares runtime-neutral helpers, never the server side's http layer).
  ...layer('packages/ratecontract/src/client/**/*.ts', ['stores', 'http', 'adapters', 'cli', 'testing', 'config', 'service', 'rls', 'metrics']),
  // The metrics bindings read core events and limiters only: library users get them without the service or the config file.
  ...layer('packages/ratecontract/src/metrics/**/*.ts', ['stores', 'http', 'adapters', 'cli', 'testing', 'config', 'service', 'rls']),
  // The Envoy rate limit service sits beside src/service: it builds on core, stores, http, metrics and config, and only the cli imports it.
  ...layer('packages/cli/src/rls/**/*.ts', ['adapters', 'cli', 'testing', 'serve']),
  ...layer('packages/cli/src/serve/**/*.ts', ['rls']),
  // The host every server plugs into: it knows no front end (serve, rls, decide) and no command.
  ...layer('packages/cli/src/host/**/*.ts', ['serve', 'rls', 'decide', 'cli', 'contract']),
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
