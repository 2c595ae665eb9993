// The managed-vs-hand-written benchmark runs end to end on tiny settings (no timing is asserted).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bench = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'managed.ts');
const census = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'step-census.ts');
const hasData = existsSync('/usr/share/datasets/fashion-mnist');

describe('bench:managed', () => {
  it.skipIf(!hasData)('reports both loops and their ratio as JSON', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flodl-bench-'));
    try {
      const out = join(dir, 'result.json');
      const child = spawnSync(
        process.execPath,
        ['--import', 'tsx', bench, '--samples', '512', '--rounds', '1', '--threads', '1', '--json', out],
        { encoding: 'utf8', timeout: 120_000 },
      );
      expect(child.status, child.stderr).toBe(0);
      const result = JSON.parse(readFileSync(out, 'utf8'));
      expect(result.samples).toBe(512);
      expect(result.handWritten.median).toBeGreaterThan(0);
      expect(result.managed.median).toBeGreaterThan(0);
      expect(result.ratio.median).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bench:census', () => {
  it.skipIf(!hasData)('the managed step makes no more native calls than the hand-written one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flodl-census-'));
    try {
      const out = join(dir, 'result.json');
      const child = spawnSync(
        process.execPath,
        ['--import', 'tsx', census, '--short', '2', '--long', '6', '--json', out],
        { encoding: 'utf8', timeout: 120_000, env: { ...process.env, FLODL_PROGRESS: '0' } },
      );
      expect(child.status, child.stderr).toBe(0);
      const { nativeCallsPerStep, differences } = JSON.parse(readFileSync(out, 'utf8'));
      expect(nativeCallsPerStep.handWritten).toBeGreaterThan(0);
      expect(nativeCallsPerStep.managed, JSON.stringify(differences)).toBeLessThanOrEqual(
        nativeCallsPerStep.handWritten,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
