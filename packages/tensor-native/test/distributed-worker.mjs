// One rank of a test process group (test/distributed.test.ts forks one per rank). It takes a
// task over IPC, runs the scenario against the built package, reports the result and exits.
import { createProcessGroup, FlodlError, manualSeed, randn, Tensor, toBytes } from '../dist/index.js';

const inbox = [];
const waiting = [];
process.on('message', (message) => {
  const next = waiting.shift();
  if (next) next(message);
  else inbox.push(message);
});
function nextMessage() {
  return inbox.length > 0 ? Promise.resolve(inbox.shift()) : new Promise((resolve) => waiting.push(resolve));
}

function failure(error) {
  return FlodlError.isInstance(error)
    ? { code: error.code, message: error.message }
    : { code: 'NOT_A_FLODL_ERROR', message: String(error?.stack ?? error) };
}

function attempt(fn) {
  const started = Date.now();
  try {
    fn();
    return { error: null, elapsedMs: Date.now() - started };
  } catch (error) {
    return { error: failure(error), elapsedMs: Date.now() - started };
  }
}

// Each value as its exact bytes (for bit-identity across ranks) and as numbers.
function report(tensor) {
  return { bytes: toBytes(tensor), values: tensor.toArray(), dtype: tensor.dtype, shape: [...tensor.shape] };
}

function groupOf(task) {
  return createProcessGroup({
    backend: task.backend,
    rank: task.rank,
    worldSize: task.worldSize,
    port: task.port,
    timeoutMs: task.timeoutMs,
  });
}

const scenarios = {
  collectives(task) {
    const { rank, worldSize } = task;
    const group = groupOf(task);
    const device = task.backend === 'nccl' ? group.device : 'cpu';
    const from = (data, shape, dtype) => Tensor.from(data, shape, { dtype, device });
    const out = {};

    const sum = from(
      [1, 2, 3, 4, 5, 6].map((value) => value * (rank + 1)),
      [2, 3],
      'float32',
    );
    group.allReduce(sum);
    out.sumFloat32 = report(sum);

    manualSeed(100 + rank);
    const noise = randn([1031], { dtype: 'float32' }).to(device);
    group.allReduce(noise, { op: 'sum' });
    out.noiseSum = report(noise);

    manualSeed(200 + rank);
    const average = randn([3, 7], { dtype: 'float64' }).to(device);
    group.allReduce(average, { op: 'avg' });
    out.avgFloat64 = report(average);

    const peaks = from([rank, 3 - rank, rank % 2, 10 - rank], [4], 'float32');
    const troughs = peaks.clone();
    group.allReduce(peaks, { op: 'max' });
    group.allReduce(troughs, { op: 'min' });
    out.maxFloat32 = report(peaks);
    out.minFloat32 = report(troughs);

    const product = from([rank + 1, 2, -1], [3], 'float64');
    group.allReduce(product, { op: 'product' });
    out.productFloat64 = report(product);

    // Several dtypes and a non-contiguous view in one call: one flat buffer per dtype.
    const transposed = from(
      [1, 2, 3, 4, 5, 6].map((value) => value + rank),
      [2, 3],
      'float32',
    ).transpose(0, 1);
    const doubles = from([0.5 * rank, 1, 2], [3], 'float64');
    const longs = from([rank, 1000 * rank, -rank, 7], [4], 'int64');
    const scalar = from([rank + 0.25], [], 'float32');
    group.allReduce([transposed, doubles, longs, scalar]);
    out.mixed = [transposed, doubles, longs, scalar].map(report);

    const root = worldSize - 1;
    const shared = [from([rank, rank, rank], [3], 'float32'), from([rank * 11, 5], [2], 'int64')];
    group.broadcast(shared, root);
    out.broadcast = shared.map(report);

    const gathered = group.allGather(from([rank, rank * 10], [2], 'float32'));
    out.allGather = gathered.map(report);

    group.barrier();
    group.destroy();
    group.destroy();
    out.liveAfterDestroy = group.isLive;
    return out;
  },

  // Joins a group on the task's port (a taken one, in the test) and reports how that went.
  join(task) {
    return attempt(() => groupOf(task).destroy());
  },

  // Every rank joins; then the victim exits (or stalls) and the survivors' next collective
  // must fail within the timeout.
  async peerFailure(task) {
    const group = groupOf(task);
    group.barrier();
    process.send({ kind: 'ready' });
    const order = await nextMessage();
    if (order.kind === 'exit') process.exit(0);
    if (order.kind === 'stall') {
      await nextMessage();
      group.destroy();
      return { stalled: true };
    }
    const data = Tensor.from(new Float32Array(4096).fill(task.rank));
    const first = attempt(() => group.allReduce(data));
    const second = attempt(() => group.allReduce(data));
    group.abort();
    group.abort();
    group.destroy();
    const third = attempt(() => group.barrier());
    return { first, second, third };
  },
};

const task = await nextMessage();
try {
  const result = await scenarios[task.scenario](task);
  process.send({ kind: 'result', rank: task.rank, result });
} catch (error) {
  process.send({ kind: 'result', rank: task.rank, error: failure(error) });
}
process.disconnect();
