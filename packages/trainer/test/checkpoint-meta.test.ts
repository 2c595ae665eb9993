// The meta's versions: version 2 adds the coordinator's state and the live membership, version
// 3 each file's SHA-256; a version-1 meta still reads, with those fields empty.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHECKPOINT_VERSION, readMeta } from '../src/checkpoint/meta.js';
import { temporaryFolder } from './helpers.js';

const folder = temporaryFolder('checkpoint-meta');

function v1Meta(): Record<string, unknown> {
  return {
    format: 'flodl.checkpoint',
    version: 1,
    bundleId: '0123456789abcdef',
    reason: 'stop',
    savedAt: '2026-01-01T00:00:00.000Z',
    epoch: 1,
    globalStep: 12,
    localStep: 4,
    stepsSinceAvg: 0,
    averagingCount: 4,
    mode: 'CpuSync',
    worldSize: 3,
    membership: [0, 1, 2],
    seed: 42,
    batchSize: 8,
    datasetLength: 240,
    cursor: { epoch: 1, batch: 2, totalLoss: 1, computeMs: 1, dataMs: 0 },
    coverage: { epoch: 1, totalSamples: 240, covered: [[0, 16]] },
    rng: {},
    elche: null,
    files: { model: { name: 'run.safetensors', bytes: 10 }, optimizer: {}, scheduler: null },
  };
}

function write(name: string, meta: Record<string, unknown>): string {
  const path = join(folder, name);
  writeFileSync(path, JSON.stringify(meta));
  return path;
}

describe('checkpoint meta versions', () => {
  it('reads a version-1 meta with the version-2 fields filled: live = membership, nothing lost, no guard history', () => {
    expect(CHECKPOINT_VERSION).toBe(3);
    const meta = readMeta(write('v1.meta.json', v1Meta()));
    expect(meta).toMatchObject({ version: 1, live: [0, 1, 2], lost: [], guardHistory: [], elche: null });
  });

  it('reads a version-2 meta with the coordinator state, and refuses a malformed one naming the field', () => {
    const elche = {
      anchor: 5,
      anchorRank: 1,
      smoothedMsPerBatch: [10, 20, 15],
      phase: 'Warmup',
      calibrationCount: 3,
    };
    const v2 = { ...v1Meta(), version: 2, live: [0, 2], lost: [1], guardHistory: [0.01], elche };
    expect(readMeta(write('v2.meta.json', v2))).toMatchObject({ live: [0, 2], lost: [1], elche });
    expect(() => readMeta(write('no-live.meta.json', { ...v2, live: undefined }))).toThrow(/invalid live/);
    expect(() => readMeta(write('bad-elche.meta.json', { ...v2, elche: { anchor: 'x' } }))).toThrow(
      /invalid elche/,
    );
    expect(() => readMeta(write('v4.meta.json', { ...v2, version: 4 }))).toThrow(/newer flodl/);
  });

  it('reads a version-3 meta with a sha256 per file, and refuses one whose file has none or a malformed one', () => {
    const sha256 = 'ab'.repeat(32);
    const v3 = {
      ...v1Meta(),
      version: 3,
      live: [0, 1, 2],
      lost: [],
      guardHistory: [],
      files: {
        model: { name: 'run.safetensors', bytes: 10, sha256 },
        optimizer: { 0: { name: 'run.optim.safetensors', bytes: 10, sha256 } },
        scheduler: null,
      },
    };
    expect(readMeta(write('v3.meta.json', v3)).files.model.sha256).toBe(sha256);
    const without = {
      ...v3,
      files: { ...v3.files, optimizer: { 0: { name: 'run.optim.safetensors', bytes: 10 } } },
    };
    expect(() => readMeta(write('v3-no-sha.meta.json', without))).toThrow(
      /invalid files[\s\S]*each with its sha256/,
    );
    const malformed = {
      ...v3,
      files: { ...v3.files, model: { name: 'run.safetensors', bytes: 10, sha256: 'XYZ' } },
    };
    expect(() => readMeta(write('v3-bad-sha.meta.json', malformed))).toThrow(/invalid files/);
  });
});
