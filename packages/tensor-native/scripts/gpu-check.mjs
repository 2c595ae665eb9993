#!/usr/bin/env node
// CUDA checks that need no test runner: run on a GPU machine after building the addon there.
// Compares every result with the same computation on the CPU and exits non-zero on a failure.
//   node scripts/gpu-check.mjs
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert, check, finish } from './check-harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const flodl = await import(join(here, '..', 'dist', 'index.js'));
const { CudaEvent, CudaStream, withStream, ones } = flodl;
const { Tensor, FlodlError, cuda, manualSeed, rand, randn, tidy, zeros, cat, liveTensorCount, buildInfo } =
  flodl;

function sameOnBoth(name, make, { atol = 1e-5, rtol = 1e-4 } = {}) {
  check(name, () =>
    tidy(() => {
      manualSeed(3);
      const cpuInputs = make.inputs().map((t) => t);
      const gpuInputs = cpuInputs.map((t) => t.to('cuda'));
      const onCpu = make.run(...cpuInputs);
      const onGpu = make.run(...gpuInputs);
      assert(onGpu.device === 'cuda:0', `result on ${onGpu.device}`);
      assert(onGpu.cpu().allclose(onCpu, { atol, rtol }), `values differ: cpu ${onCpu} gpu ${onGpu.cpu()}`);
    }),
  );
}

const info = buildInfo();
console.log(`flodl on libtorch ${info.torchVersion}, cuda=${info.cuda}, nccl=${info.nccl}`);
check('CUDA build and devices', () => {
  assert(info.cuda, 'addon built without CUDA');
  assert(cuda.isAvailable(), 'cuda.isAvailable() is false');
  console.log(`     ${cuda.deviceCount()} device(s): ${cuda.deviceName(0)}`);
});

sameOnBoth('add/mul broadcast', { inputs: () => [rand([4, 5]), rand([5])], run: (a, b) => a.add(b).mul(b) });
sameOnBoth(
  'matmul',
  { inputs: () => [randn([64, 32]), randn([32, 16])], run: (a, b) => a.matmul(b) },
  { atol: 1e-3 },
);
sameOnBoth('softmax/logsumexp', {
  inputs: () => [randn([8, 10])],
  run: (a) => a.softmax(1).add(a.logsumexp(1, true)),
});
sameOnBoth('reductions', {
  inputs: () => [randn([6, 7])],
  run: (a) => a.sum(0).add(a.mean(0)).add(a.std(0)).add(a.amax(0)),
});
sameOnBoth('topk/sort', {
  inputs: () => [randn([5, 9])],
  run: (a) => a.topk(3, 1).values.add(a.sort(1, true).values.narrow(1, 0, 3)),
});
sameOnBoth('gather/scatter', {
  inputs: () => [
    randn([4, 6]),
    Tensor.from(
      [
        [0, 1],
        [2, 3],
        [4, 5],
        [1, 0],
      ],
      undefined,
      { dtype: 'int64' },
    ),
  ],
  run: (a, index) => a.gather(1, index).add(a.scatter(1, index, 0.5).narrow(1, 0, 2)),
});
sameOnBoth('cat/stack/views', {
  inputs: () => [randn([3, 4]), randn([3, 4])],
  run: (a, b) => cat([a, b.t().t()], 0).reshape(4, 6).transpose(0, 1).contiguous(),
});
sameOnBoth(
  'half precision',
  { inputs: () => [randn([16])], run: (a) => a.half().mul(2).float() },
  { atol: 1e-2, rtol: 1e-2 },
);

check('device mismatch is ERR_DEVICE', () =>
  tidy(() => {
    try {
      rand([3]).add(rand([3], { device: 'cuda' }));
      throw new Error('no error');
    } catch (error) {
      assert(FlodlError.isInstance(error) && error.code === 'ERR_DEVICE', `got ${error}`);
    }
  }),
);
check('a missing device is ERR_DEVICE', () => {
  try {
    zeros([2], { device: 'cuda:77' });
    throw new Error('no error');
  } catch (error) {
    assert(FlodlError.isInstance(error) && error.code === 'ERR_DEVICE', `got ${error}`);
  }
});
check('manualSeed is deterministic on CUDA', () =>
  tidy(() => {
    manualSeed(11);
    const a = randn([100], { device: 'cuda' });
    manualSeed(11);
    const b = randn([100], { device: 'cuda' });
    assert(a.eq(b).all().item() === true, 'different numbers for the same seed');
  }),
);
check('pinned memory and non-blocking copies', () =>
  tidy(() => {
    const host = rand([1024]).pinMemory();
    assert(host.isPinned, 'not pinned');
    const device = zeros([1024], { device: 'cuda' }).copy_(host, true);
    cuda.synchronize();
    assert(device.cpu().allclose(host), 'copy differs');
  }),
);
check('memory statistics, emptyCache and a flat 10k-step loop', () => {
  cuda.synchronize();
  const base = cuda.memoryAllocated();
  const big = zeros([1024, 1024], { device: 'cuda' });
  assert(cuda.memoryAllocated() >= base + 4 * 1024 * 1024, 'allocation not seen');
  big.dispose();
  cuda.emptyCache();
  const weights = flodl.keep(randn([256, 256], { device: 'cuda' }));
  const input = flodl.keep(randn([64, 256], { device: 'cuda' }));
  const samples = [];
  for (let step = 0; step < 10000; step++) {
    tidy(() => {
      const out = input.matmul(weights).relu().sum();
      weights.sub_(weights.mul(1e-6));
      return out.dispose();
    });
    if (step % 2000 === 1999) {
      cuda.synchronize();
      samples.push(cuda.memoryAllocated());
    }
  }
  weights.dispose();
  input.dispose();
  assert(new Set(samples).size === 1, `allocated memory moved: ${samples.join(', ')}`);
  console.log(
    `     allocated after each 2000 steps: ${samples.join(', ')} bytes; live tensors ${liveTensorCount()}`,
  );
});

check('streams and events: a side-stream copy ordered before compute, timed', () =>
  tidy(() => {
    const side = new CudaStream();
    const copied = new CudaEvent();
    const start = new CudaEvent({ enableTiming: true });
    const end = new CudaEvent({ enableTiming: true });
    const host = ones([1 << 22]).pinMemory();
    const moved = withStream(side, () => {
      start.record(side);
      const result = host.to({ device: 'cuda', nonBlocking: true });
      end.record(side);
      copied.record(side);
      return result;
    });
    assert(CudaStream.current().id !== side.id, 'withStream did not restore the stream');
    copied.wait();
    moved.recordStream(CudaStream.current());
    assert(moved.sum().item() === 1 << 22, 'copy not complete before compute');
    end.synchronize();
    const ms = start.elapsedTime(end);
    assert(ms >= 0, `elapsed ${ms}`);
    console.log(`     16 MiB host-to-device copy on a side stream: ${ms.toFixed(3)} ms`);
    for (const event of [copied, start, end]) event.dispose();
  }),
);

finish();
