import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The README blocks run in child processes (test/readme-blocks.test.ts): two at a time, for
    // CI's two cores.
    pool: 'forks',
    maxConcurrency: 2,
    testTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
