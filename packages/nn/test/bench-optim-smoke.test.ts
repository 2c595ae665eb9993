// bench:optim runs end to end on tiny settings (no timing is asserted): every optimizer in both
// modes, and without an interpreter that has torch it says so and leaves the PyTorch columns out.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bench = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'optim-step.mjs');

describe('bench:optim', () => {
  it('times every optimizer in both modes and reports as a table and JSON', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flodl-bench-optim-'));
    try {
      const out = join(dir, 'result.json');
      const run = spawnSync(
        process.execPath,
        [
          bench,
          '--steps',
          '3',
          '--warmup',
          '1',
          '--rounds',
          '1',
          '--python',
          join(dir, 'no-python'),
          '--json',
          out,
        ],
        { encoding: 'utf8' },
      );
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain('the PyTorch columns are left out');
      for (const name of ['SGD', 'Adam', 'RMSprop', 'Adagrad', 'NAdam', 'RAdam'])
        expect(run.stdout).toMatch(new RegExp(`^${name} `, 'm'));
      const result = JSON.parse(readFileSync(out, 'utf8'));
      expect(Object.keys(result.flodl)).toHaveLength(12);
      for (const us of Object.values(result.flodl)) expect(us).toBeGreaterThan(0);
      expect(result.pytorch).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('refuses a bad setting, saying which', () => {
    const run = spawnSync(process.execPath, [bench, '--model', 'vgg'], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--model must be mlp64 or mlp, got vgg');
  });
});
