// ESLint flat config: type-aware rules from typescript-eslint on every TypeScript file of the
// monorepo. What it enforces, and why, is in CONTRIBUTING.md ("What the lint enforces").
// Layers and cycles are checked by dependency-cruiser (.dependency-cruiser.cjs), formatting by
// Prettier, dead files/exports/dependencies by knip: `npm run lint` runs them all.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import globals from 'globals'

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      '**/.test-results/**',
      'packages/server/builtin-models/**',
      // Planted violations that the lint configuration's own tests expect to fail.
      'scripts/lint-fixtures/**',
    ],
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    extends: [js.configs.recommended],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: ['**/*.{ts,tsx}'],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: [
            'vitest.config.ts',
            'scripts/*.ts',
            'scripts/lint-fixtures/*.ts',
            'e2e/vitest.config.ts',
            'packages/{protocol,server,node}/vitest.config.ts',
          ],
        },
        tsconfigRootDir: import.meta.dirname,
      },
      globals: { ...globals.node },
    },
    rules: {
      // A promise nobody awaits loses its error (an unhandled rejection kills the coordinator).
      '@typescript-eslint/no-floating-promises': 'error',
      // An async function where a void callback is expected (an event handler, forEach) drops
      // its rejection the same way.
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // TypeScript checks these better than ESLint's scope analysis.
      'no-undef': 'off',
    },
  },
  {
    files: ['packages/web/**/*.{ts,tsx,mjs}', 'e2e/**/*.ts', 'bench/web/**/*.ts'],
    languageOptions: { globals: { ...globals.browser, ...globals.node } },
  },
  {
    files: ['packages/web/**/*.tsx'],
    rules: {
      // React ignores what an event handler prop returns, so `onClick={async () => ...}` is the
      // idiom; a rejection there reaches the browser's unhandled-rejection report (there is no
      // process to crash). Everything else (void callbacks, conditions, spreads) stays checked.
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { attributes: false } },
      ],
    },
  },
  {
    // Tests may reach into shapes loosely; the boundaries below may not.
    files: ['**/*.test.{ts,tsx}', '**/test/**', 'e2e/**', 'bench/**', '**/test-support/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
)
