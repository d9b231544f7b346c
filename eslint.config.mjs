// Lint rules. The workflow block keeps workflow code deterministic: no Node built-ins, no I/O
// libraries, no Temporal client/worker, activities imported as types only. The boundary blocks
// keep the production path free of the simulator and the worker runtime and make the rooms of
// src/starter point one way (cli -> demo -> gateway -> client). Everywhere: no floating promises.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

// ---- boundaries of the production path and of the rooms of src/starter ---------------------------
// `import type` is erased, so it is allowed only where it types a lazy `require` (the CLI).

/** An import of a sibling folder by a relative path: `../gateway/main`, `../../../simulator`. */
const room = (name) => `^(\\.\\./)+(starter/)?${name}(/|$)`;
/** The fake provider and the worker runtime: never on the production path (gateway, client, CLI, provider). */
const fakeAndWorker = (allowTypeImports) => [
  { regex: room('simulator'), allowTypeImports, message: 'The production path loads no simulator (src/worker-main.ts and `mpf simulator` require it lazily; the demo and tests may import it).' },
  { regex: '^(\\.\\./)+worker(-main)?$', allowTypeImports, message: 'The production path loads no worker (src/worker*.ts); the CLI requires it lazily in its action.' },
  { group: ['@temporalio/worker', '@temporalio/worker/**'], allowTypeImports, message: 'The production path loads no worker runtime (@temporalio/worker).' },
];
const noRoom = (name, why) => ({ regex: room(name), message: why });
/** Nothing may reach these by `require()` or `import()`, which no-restricted-imports cannot see. */
const noDynamicLoads = [
  'error',
  { selector: "CallExpression[callee.name='require']", message: 'No require() here: static imports only, so the boundary rules see every dependency.' },
  { selector: 'ImportExpression', message: 'No import() here: static imports only, so the boundary rules see every dependency.' },
];

// Flat config replaces (does not merge) a rule's options where file blocks overlap, so the CLI's
// two blocks both list these: what a command runs is required in its action, never imported.
const cliLazyRooms = [
  ...fakeAndWorker(true),
  { regex: room('gateway'), allowTypeImports: true, message: 'The CLI loads the gateway only in `mpf gateway`: require it in the action.' },
  { regex: room('demo'), allowTypeImports: true, message: 'The CLI loads the demo only in `mpf demo`: require it in the action.' },
];

export default tseslint.config(
  // Generated code (npm run openapi) is checked by `npm run openapi -- --check`, not linted.
  { ignores: ['node_modules/', 'dist/', '.cache/', 'coverage/', 'bin/', 'scripts/*.cjs', 'eslint.config.mjs', 'src/http-client/gateway-api.ts', 'test/upgrade/', 'packages/*/dist/'] },
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
      // The workflow modules are preloaded: evaluated once per worker thread and shared by every
      // flow (src/worker.ts, preloadWorkflowModules). Module scope therefore holds no state.
      'no-restricted-syntax': [
        'error',
        {
          selector: ":matches(Program, ExportNamedDeclaration) > VariableDeclaration[kind!='const']",
          message: 'No module-level let/var in workflow code: the module is shared by every flow on a worker thread (keep state in the flow\'s session).',
        },
        {
          selector: ":matches(Program, ExportNamedDeclaration) > VariableDeclaration > VariableDeclarator > NewExpression[callee.name=/^(Map|Set|WeakMap|WeakSet|Array)$/]",
          message: 'No module-level Map/Set/array built with new in workflow code: the module is shared by every flow on a worker thread.',
        },
      ],
    },
  },
  {
    // Below the workflows: activities, merchant events and configuration use the contract's data
    // (src/contract), never workflow code; only the message types of workflows/messages may be
    // imported, as types.
    files: ['src/activities/**/*.ts', 'src/merchant-events/**/*.ts', 'src/config/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^(\\.\\./)+workflows/(?!messages$)', message: 'Activities, merchant events and config import no workflow code: move shared data to src/contract.' },
            { regex: '^(\\.\\./)+workflows/messages$', allowTypeImports: true, message: 'Only the message types of workflows/messages, with `import type`.' },
          ],
        },
      ],
    },
  },
  {
    // The real provider client stands on the contract, never on its fake.
    files: ['src/provider/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [...fakeAndWorker(false), noRoom('starter', 'The provider client is below the starter.')] }],
      'no-restricted-syntax': noDynamicLoads,
    },
  },
  {
    // client/: the library every face uses; it imports no face.
    files: ['src/starter/client/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...fakeAndWorker(false),
            noRoom('gateway', 'client/ imports no face: the gateway stands on the client, not the reverse.'),
            noRoom('cli', 'client/ imports no face: the CLI stands on the client, not the reverse.'),
            noRoom('demo', 'client/ imports no face: the demo stands on the client, not the reverse.'),
          ],
        },
      ],
      'no-restricted-syntax': noDynamicLoads,
    },
  },
  {
    // gateway/: the production HTTP server; it stands on client/ only.
    files: ['src/starter/gateway/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...fakeAndWorker(false),
            noRoom('cli', 'The gateway imports no CLI: the arrows point cli -> demo -> gateway -> client.'),
            noRoom('demo', 'The gateway imports no demo: the arrows point cli -> demo -> gateway -> client.'),
          ],
        },
      ],
      'no-restricted-syntax': noDynamicLoads,
    },
  },
  {
    // console/: the merchant's console, a plugin the gateway registers; it reaches the flows only
    // through the gateway's HTTP API (app.inject), so it imports no gateway, demo or CLI. Its ESM-only
    // libraries (openid-client, jose) are loaded by import(), as auth/ loads jose.
    files: ['src/starter/console/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...fakeAndWorker(false),
            noRoom('cli', 'The console imports no CLI.'),
            noRoom('demo', 'The console imports no demo.'),
            noRoom('gateway', "The console imports no gateway: it calls the gateway's HTTP API (api.ts)."),
            noRoom('client', "The console imports no client: it calls the gateway's HTTP API (api.ts)."),
          ],
        },
      ],
    },
  },
  {
    // cli/: the program and its commands. What a command runs (a server, the demo, the worker) is
    // loaded by a `require` in its action; a static import would load it for every command.
    files: ['src/starter/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...cliLazyRooms,
          ],
        },
      ],
    },
  },
  {
    // The program and the command modules stay light: a command loads the Temporal client only
    // when it runs (`mpf worker` and `mpf --help` load none of it).
    files: ['src/starter/cli/main.ts', 'src/starter/cli/program.ts', 'src/starter/cli/commands/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...cliLazyRooms,
            {
              group: ['@temporalio/client', '**/client/mpf-client', '**/client/from-env', '**/connect', '**/workflows/**', '**/codec/**'],
              allowTypeImports: true,
              message: 'Commands load the client library when they run: require it in the action.',
            },
          ],
        },
      ],
    },
  },
  {
    // http-client/: also the light package @merchant-payment-flows/client (packages/client compiles
    // these files alone, with openapi-fetch its only dependency), so it imports nothing else.
    files: ['src/http-client/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!\\./[^/]+$|node:|openapi-fetch$)',
              message: 'src/http-client is the light package: it imports only openapi-fetch, Node built-ins (node:…) and its own files.',
            },
          ],
        },
      ],
      'no-restricted-syntax': noDynamicLoads,
    },
  },
  {
    // demo/: may run the simulator and a worker; nothing below the CLI imports the CLI.
    files: ['src/starter/demo/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [noRoom('cli', 'The demo imports no CLI: the arrows point cli -> demo -> gateway -> client.')] }],
    },
  },
  {
    // Steps short: a hand-written function longer than this is split into named steps. Tests are
    // left out (a describe block holds its tests); generated code is ignored above.
    files: ['src/**/*.ts', 'tools/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 120, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // tools/ stands above src/: nothing in src/ imports a tool (`mpf cluster` requires the launcher
    // by a computed path, only in a source checkout). A rule of its own name, so the blocks above
    // that set no-restricted-imports for their rooms do not replace it.
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(\\.\\./)+tools(/|$)', message: 'src/ imports nothing from tools/: the tools stand on src/, and the package (built from src/) has none of them.' }] },
      ],
    },
  },
  {
    // tools/cluster: the native production topology (`mpf cluster`). It runs the apps as processes
    // (`mpf worker`, `mpf gateway`, `mpf simulator`), never in its own process: from src/ it takes
    // only what addresses and provisions them (and the keys and keyring they are given).
    files: ['tools/cluster/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+src/(?!(contract|temporal|auth)/|workflows/search-attributes$|codec/codec-server$)',
              message: 'The cluster launcher starts the apps as processes: from src/ it imports only contract/, temporal/, auth/ (keys), the search attributes and the codec endpoint URL.',
            },
            { group: ['@temporalio/worker', '@temporalio/worker/**'], message: 'The cluster launcher runs workers as processes (`mpf worker`), never the worker runtime in its own.' },
          ],
        },
      ],
    },
  },
);
