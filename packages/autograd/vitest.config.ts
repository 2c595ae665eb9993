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
    execArgv: ['--expose-gc'],
    // libtorch logs warnings straight to stderr, past vitest: level 2 keeps a green run quiet
    // (errors still show); test/native-warnings.test.ts checks the expected ones.
    env: { GLOG_minloglevel: '2' },
    testTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
