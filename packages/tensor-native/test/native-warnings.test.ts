// libtorch writes its warnings straight to the process's stderr, past vitest; the pool in
// vitest.config.ts holds back the ones the suite is known to cause (and shows any other). Those
// are checked here, in a fresh process with libtorch's default log level.
import { runIsolated } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { buildInfo } from '../src/index.js';

const PACKAGE = new URL('../dist/index.js', import.meta.url).href;

describe("libtorch's warnings", () => {
  it('scatterReduce warns once per process that scatter_reduce() is in beta (libtorch 1.x)', () => {
    const run = runIsolated(`
      import { Tensor } from '${PACKAGE}';
      const index = Tensor.from([0, 1, 0, 1], undefined, { dtype: 'int64' });
      const src = Tensor.from([1, 2, 3, 4]);
      for (let k = 0; k < 2; k++) {
        console.log(Tensor.from([10, 20]).scatterReduce(0, index, src, 'sum').toArray().join(' '));
      }
    `);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('14 26\n14 26\n');
    // libtorch 1.x warns once per process; the 2.x build checked here (2.11) no longer warns.
    const warnings = run.stderr.match(/scatter_reduce\(\) is in beta and the API may change at any time/g);
    expect(warnings?.length ?? 0).toBe(Number.parseInt(buildInfo().torchVersion, 10) < 2 ? 1 : 0);
  });
});
