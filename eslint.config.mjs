// Lint rules. The workflow block keeps workflow code deterministic: no Node built-ins, no I/O
// libraries, no Temporal client/worker, activities imported as types only; and everywhere no
// floating promises.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.cache/', 'coverage/', 'bin/', 'scripts/*.cjs', 'eslint.config.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
      globals: { ...globals.node },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports', fixStyle: 'inline-type-imports' }],
    },
  },
  {
    files: ['src/workflows/**/*.ts', 'test/fixtures/*workflows*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({ name, message: 'Workflow code is deterministic: no Node built-ins (use an activity).' })),
            { name: 'undici', message: 'Workflow code makes no I/O: HTTP belongs in activities.' },
            { name: '@temporalio/client', message: 'Workflows do not use the client.' },
            { name: '@temporalio/worker', message: 'Workflows do not use the worker.' },
            { name: '@temporalio/activity', message: 'Workflows do not use the activity API.' },
            { name: 'pino', message: 'Workflows log with @temporalio/workflow log.' },
          ],
          patterns: [
            {
              regex: '(^|/)activities(/(?!types$|retry-policies$)[^/]+)?$',
              allowTypeImports: true,
              message: 'Import activities with `import type` only (types and retry-policies are workflow-safe).',
            },
            { group: ['**/provider/*', '**/simulator/*', '**/starter/*', '**/config/*'], message: 'Workflow code imports no I/O modules.' },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'fetch', message: 'No I/O in workflows.' },
        { name: 'process', message: 'No process access in workflows.' },
        { name: 'require', message: 'No dynamic require in workflows.' },
      ],
    },
  },
);
