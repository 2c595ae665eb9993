// Runs in a worker thread (test/worker-thread.test.ts): loads three epochs and posts the order.
import { parentPort, workerData } from 'node:worker_threads';
import { liveTensorCount } from '@flodl/tensor-native';
import { epochOrder } from './epoch-order.js';

const order = epochOrder(workerData as { length: number; batchSize: number; seed: number; epochs: number });
parentPort!.postMessage({ order, live: liveTensorCount() });
