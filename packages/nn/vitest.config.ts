import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The type-level tests (test/*.test-d.ts) are compile-time assertions, checked by the
    // package's typecheck task (tsc --noEmit over src and test, part of npm test); vitest's
    // typecheck mode (experimental, a second tsc run) stays off.
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
