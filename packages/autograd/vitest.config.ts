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
    // the warning the 'same'-padding convolutions cause (test/native-warnings.test.ts asserts it in a
    // fresh process) and shows every other.
    pool: libtorchForks([
      /Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy/,
    ]),
    execArgv: ['--expose-gc'],
    testTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
