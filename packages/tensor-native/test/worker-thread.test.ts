import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { liveTensorCount, Tensor } from '../src/index.js';

// The addon keeps its state per JS environment, so worker threads load it independently.
const workerSource = `
  const { parentPort, workerData } = require('node:worker_threads');
  import(workerData.entry).then((flodl) => {
    const a = flodl.Tensor.from([[1, 2], [3, 4]], undefined, { dtype: 'float64' });
    const b = flodl.tidy(() => a.matmul(a).sum().item());
    const live = flodl.liveTensorCount();
    a.dispose();
    parentPort.postMessage({ value: b, live, after: flodl.liveTensorCount() });
  }).catch((error) => parentPort.postMessage({ error: String(error && error.stack || error) }));
`;

function runWorker(entry: string): Promise<{ value: number; live: number; after: number; error?: string }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerSource, { eval: true, workerData: { entry } });
    worker.once('message', (message) => {
      void worker.terminate();
      resolve(message);
    });
    worker.once('error', reject);
  });
}

describe('worker threads', () => {
  it('loads the addon in several workers at once, each with its own tensor table', async () => {
    const entry = new URL('../dist/index.js', import.meta.url).href;
    const mainTensor = Tensor.from([1, 2, 3]);
    const before = liveTensorCount();
    const results = await Promise.all([runWorker(entry), runWorker(entry), runWorker(entry)]);
    for (const result of results) {
      expect(result.error).toBeUndefined();
      expect(result.value).toBe(54);
      expect(result.live).toBe(1);
      expect(result.after).toBe(0);
    }
    expect(liveTensorCount()).toBe(before);
    expect(mainTensor.sum().item()).toBe(6);
    mainTensor.dispose();
  });
});
