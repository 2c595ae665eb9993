import { libtorchForks } from '@flodl/testing/pool';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The type-level tests (test/*.test-d.ts) are compile-time assertions, checked by the
    // package's typecheck task (tsc --noEmit over src and test, part of npm test); vitest's
    // typecheck mode (experimental, a second tsc run) stays off.
    setupFiles: ['test/device-setup.ts'],
    // libtorch logs warnings straight to the worker's stderr, past vitest: this pool holds back
    // the warning scatterReduce's goldens cause on libtorch 1.x (test/native-warnings.test.ts
    // asserts it in a fresh process) and shows every other.
    pool: libtorchForks([/scatter_reduce\(\) is in beta and the API may change at any time/]),
    execArgv: ['--expose-gc'],
    testTimeout: 60_000,
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
