// @ts-check
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'bench/**', 'node_modules/**', 'coverage/**', 'examples/**'] },
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
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', { selector: 'ExportDefaultDeclaration', message: 'Named exports only.' }],
    },
  },
  {
    // Unit tests run without Redis: only test/redis, test/faults and test/load may start redis-server or talk to it.
    files: ['test/**/*.ts'],
    ignores: ['test/redis/**', 'test/faults/**', 'test/load/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'ioredis', message: 'Unit tests run without Redis: a test that needs a Redis client belongs under test/redis, test/faults or test/load.' },
            { name: 'redis', message: 'Unit tests run without Redis: a test that needs a Redis client belongs under test/redis, test/faults or test/load.' },
          ],
          patterns: [
            {
              group: ['**/redis/helpers/*', '**/faults/helpers*', '**/load/fixtures/*'],
              message: 'Unit tests run without Redis: a test that starts redis-server belongs under test/redis, test/faults or test/load.',
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
