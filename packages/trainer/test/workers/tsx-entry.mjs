// Worker entry: Node 20 does not apply `--import tsx` to workers, so register tsx here, then
// load the TypeScript worker named by workerData.script.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.script);
