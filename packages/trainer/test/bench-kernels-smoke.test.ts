// bench:kernels needs CUDA and CUPTI (it counts what the GPU runs per step), so it runs on the GPU
// machine only (`gpu-run.sh kernels`); here it must refuse a bad option and, without CUDA, say
// so and exit 0.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cuda } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';

const bench = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'kernels.mjs');
const run = (...args: string[]) =>
  spawnSync(process.execPath, [bench, ...args], { encoding: 'utf8', timeout: 60_000 });

describe('bench:kernels', () => {
  it('names an unknown model and exits 1', () => {
    const child = run('--model', 'mlp64,nope');
    expect(child.status).toBe(1);
    expect(child.stderr).toContain('unknown --model nope');
  });

  it.skipIf(cuda.isAvailable())('without CUDA, says why it skipped and exits 0', () => {
    const child = run();
    expect(child.status, child.stderr).toBe(0);
    expect(child.stdout).toContain('bench:kernels: skipped, no CUDA device');
  });
});
