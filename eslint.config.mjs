// @ts-check
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

/** Tests and their harnesses (test/ holds the benchmark too): linted without type information. */
const TEST_FILES = ['**/*.test.ts', 'test/**/*.ts', '**/testing/**/*.ts', 'libs/*/test/**/*.ts'];

/** Outside the layer fences: tests, test harnesses, the benchmark. */
const UNFENCED = [...TEST_FILES, '**/*.testing.ts', 'libs/*/test/**/*.ts'];

/** Where Kysely may be imported: repositories, query fragments, transactions, composition roots. */
const KYSELY_HOMES = [
  '**/*.repository.ts',
  '**/*.sql.ts',
  '**/*transaction*.ts',
  '**/deps.ts',
  'libs/db/**',
];

/** Where express may be imported: the gateway's HTTP modules. */
const EXPRESS_HOMES = [
  'services/gateway/src/**/*.routes.ts',
  'services/gateway/src/**/*.middleware.ts',
  'services/gateway/src/http/**',
  'services/gateway/src/app.ts',
];

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', 'coverage/**', 'helm/**', '**/*.js', '**/*.mjs'],
  },
  eslint.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // One TypeScript program for the whole tree (tsconfig.eslint.json) instead of one per
        // package: the packages' programs each loaded @types/node and their dependencies'
        // sources again. The client and the app SDK first, for their own lib and types.
        project: [
          './libs/client/tsconfig.json',
          './libs/app-sdk/tsconfig.json',
          './tsconfig.eslint.json',
        ],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      // Among the costliest typed rules, for little here: the code has no enums, builds class
      // instances with their constructors, and editors already strike deprecated calls through.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
      '@typescript-eslint/no-unsafe-enum-assignment': 'off',
      '@typescript-eslint/no-deprecated': 'off',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' },
        {
          selector: "ExportSpecifier[exported.name='default']",
          message: 'Use named exports.',
        },
      ],
    },
  },
  {
    // Layer fences (STYLE 19), one rule each so they never override each other; type-only
    // imports count too, as a type from Kysely or express names the layer all the same.
    files: ['**/*.ts'],
    ignores: [...KYSELY_HOMES, ...UNFENCED],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'kysely',
              message:
                'Kysely stays in repositories (*.repository.ts), query fragments (*.sql.ts), transactions and deps.ts: take a repository instead.',
            },
          ],
          patterns: [{ group: ['kysely/*'], message: 'Kysely stays in repositories.' }],
        },
      ],
    },
  },
  {
    files: ['**/*.ts'],
    ignores: [...EXPRESS_HOMES, ...UNFENCED],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'express',
              message:
                "express stays in the gateway's HTTP modules (*.routes.ts, *.middleware.ts, http/, app.ts): services and libraries take plain values.",
            },
          ],
          patterns: [{ group: ['express/*'], message: 'express stays in the HTTP modules.' }],
        },
      ],
    },
  },
  {
    // Tests get the untyped rules only: typed linting of half the files (and their share of the
    // one program) took more than the rest together, which kept `pnpm lint` over a minute. STYLE
    // 11's typed rules hold on all source; consistent-type-imports and no any hold here too.
    files: TEST_FILES,
    languageOptions: { parserOptions: { project: false, projectService: false } },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // Migrations are frozen snapshots typed against no app code, as kysely's docs advise.
    files: ['libs/db/src/migrations/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  prettier,
);
