import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The type-level tests (test/*.test-d.ts) run as tests too; the device tier skips them
    // (types do not depend on the device, and its machine carries no TypeScript).
    typecheck: {
      enabled: process.env.FLODL_TEST_DEVICE === undefined,
      include: ['test/**/*.test-d.ts'],
      tsconfig: 'tsconfig.json',
      // Errors in other files are the typecheck task's (tsc --noEmit) to report.
      ignoreSourceErrors: true,
    },
    setupFiles: ['test/device-setup.ts'],
    pool: 'forks',
    // Runs started by tests keep the terminal quiet unless a test gives the display a stream.
    env: { FLODL_PROGRESS: '0' },
    execArgv: ['--expose-gc'],
    testTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
