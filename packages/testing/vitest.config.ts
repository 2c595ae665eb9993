import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
