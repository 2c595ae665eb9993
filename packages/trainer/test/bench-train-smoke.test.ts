// bench:train (as bench:foreach runs it: two Adam modes on both sides) end to end on tiny
// settings; no timing is asserted.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bench = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'train.mjs');
// The interpreter bench:train would take (it tries $PYTHON, python3, /usr/bin/python3).
const python = [process.env.PYTHON, 'python3', '/usr/bin/python3']
  .filter((candidate): candidate is string => candidate !== undefined && candidate !== '')
  .find(
    (candidate) =>
      spawnSync(candidate, ['-c', 'import torch'], { stdio: 'ignore', timeout: 60_000 }).status === 0,
  );

describe('bench:train with several Adam modes', () => {
  it.skipIf(python === undefined)(
    'trains mlp64 in both modes on both sides and reports the foreach ratios',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'flodl-bench-train-'));
      try {
        const out = join(dir, 'result.json');
        const child = spawnSync(
          process.execPath,
          [
            bench,
            '--',
            '--adam',
            'single,foreach',
            '--model',
            'mlp64',
            '--steps',
            '5',
            '--warmup',
            '1',
            '--threads',
            '1',
            '--python',
            python!,
            '--json',
            out,
          ],
          { encoding: 'utf8', timeout: 120_000 },
        );
        expect(child.status, child.stderr).toBe(0);
        expect(child.stdout).toContain('flodl foreach / single');
        const result = JSON.parse(readFileSync(out, 'utf8'));
        expect(result.adams).toEqual(['single', 'foreach']);
        expect(result.models.map((row: { adam: string }) => row.adam)).toEqual(['single', 'foreach']);
        for (const row of result.models) {
          expect(row.name).toBe('mlp64');
          expect(row.flodl.updateSeconds).toBeGreaterThan(0);
          expect(row.pytorch.updateSeconds).toBeGreaterThan(0);
          // The same seed, data and update rule: the last losses agree across the sides and modes.
          expect(row.flodl.finalLoss).toBeCloseTo(result.models[0].pytorch.finalLoss, 5);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
