// The cooperative Worker on one device draws the progress display and writes the metrics log.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  Linear,
  manualSeed,
  mseLoss,
  randn,
  readMetricsLog,
  SGD,
  TensorDataset,
  Trainer,
} from '../src/index.js';

describe('cooperative Worker monitor, one device', () => {
  it('the display shows every epoch, the log reads back with them', async () => {
    manualSeed(9);
    const x = randn([32, 4]);
    const data = new TensorDataset([x, x.matmul(randn([4, 2]))]);
    const dir = mkdtempSync(join(tmpdir(), 'flodl-worker-monitor-'));
    const lines: string[] = [];
    try {
      const path = join(dir, 'run.jsonl');
      const worker = await Trainer.builder(
        () => new Linear(4, 2),
        (params) => new SGD(params, { lr: 0.01 }),
        (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
      )
        .dataset(data)
        .batchSize(8)
        .numEpochs(2)
        .devices(['cpu'])
        .metricsLog(path)
        .progress({ stream: { write: (text: string) => lines.push(text) }, tty: false })
        .intoWorker();
      for await (const _plan of worker.plans()) {
        for await (const batch of worker.batches()) {
          const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
          loss.backward();
          await worker.step(loss);
        }
      }
      await worker.finish();
      const text = lines.join('');
      expect(text).toMatch(/epoch 1\/2/);
      expect(text).toMatch(/epoch 2\/2/);
      const log = readMetricsLog(path);
      const epochs = log.records.filter((record) => record.kind === 'epoch');
      expect(epochs.map((record) => record.metrics.epoch)).toEqual([0, 1]);
      expect(log.records.filter((record) => record.kind === 'step').length).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
