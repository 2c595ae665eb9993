// libtorch writes its warnings straight to the process's stderr, past vitest; vitest.config.ts
// raises libtorch's log level so that a green run prints none. The warnings the suite is known to
// cause are checked here instead, in a fresh process with the default log level.
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
