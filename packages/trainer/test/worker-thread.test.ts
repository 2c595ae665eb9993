import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { epochOrder } from './workers/epoch-order.js';

// A worker thread has its own addon state: the loader works there and yields the same order.
describe('DataLoader in a worker thread', () => {
  it('yields the order the main thread computes, and leaks nothing there', async () => {
    const plan = { length: 100, batchSize: 10, seed: 3, epochs: 3 };
    const worker = new Worker(new URL('./workers/tsx-entry.mjs', import.meta.url), {
      workerData: { ...plan, script: new URL('./workers/loader-order.ts', import.meta.url).href },
    });
    const reply = await new Promise<{ order: number[]; live: number }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    expect(reply).toEqual({ order: epochOrder(plan), live: 0 });
  });
});
