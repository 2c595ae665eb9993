import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The type-level tests (test/*.test-d.ts) are compile-time assertions, checked by the
    // package's typecheck task (tsc --noEmit over src and test, part of npm test); vitest's
    // typecheck mode (experimental, a second tsc run) stays off.
    setupFiles: ['test/device-setup.ts'],
    pool: 'forks',
    // Runs started by tests keep the terminal quiet unless a test gives the display a stream.
    env: { FLODL_PROGRESS: '0' },
    execArgv: ['--expose-gc'],
    testTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
