// libtorch writes its warnings straight to the process's stderr, past vitest; the pool in
// vitest.config.ts holds back the ones the suite is known to cause (and shows any other). Those
// are checked here, in a fresh process with libtorch's default log level.
import { runIsolated } from '@flodl/testing';
import { describe, expect, it } from 'vitest';

const PACKAGE = new URL('../dist/index.js', import.meta.url).href;
const HERE = new URL('.', import.meta.url).pathname;

describe("libtorch's warnings", () => {
  it("conv1d with padding 'same' and an even kernel warns that it pads a copy of the input", () => {
    const run = runIsolated(
      `
      import { ones } from '@flodl/tensor-native';
      import { F } from '${PACKAGE}';
      console.log(F.conv1d(ones([1, 1, 5]), ones([1, 1, 2]), undefined, { padding: 'same' }).shape.join(' '));
    `,
      { cwd: HERE },
    );
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('1 1 5\n');
    expect(run.stderr).toMatch(
      /Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy of the input be created/,
    );
  });
});
