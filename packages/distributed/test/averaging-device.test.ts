// The averaging steps on the device the model lives on: each case is written once and runs on
// the CPU and, where there is a GPU, on CUDA.
import { BatchNorm1d, Linear, type Module } from '@flodl/nn';
import {
  aten,
  createProcessGroup,
  cuda,
  type Device,
  distributed,
  liveTensorCount,
  manualSeed,
  randn,
  type Tensor,
  tidy,
  toBytes,
  zeros,
} from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import {
  applyConsensus,
  collectiveAverage,
  type HostTensor,
  hostDtype,
  readFloats,
  releaseCollectiveBuffers,
  releaseSnapshotBuffers,
  snapshotContribution,
  writeFloats,
} from '../src/averaging/index.js';
import { freePort } from './fixtures/wire-helpers.js';

// The cuda cases need a CUDA build of the addon and a visible GPU; elsewhere they are skipped.
const NO_CUDA = !cuda.isAvailable();
const DEVICES: { device: Device; skip: boolean }[] = [
  { device: 'cpu', skip: false },
  { device: 'cuda:0', skip: NO_CUDA },
];

const floats = (tensor: Tensor): number[] =>
  tidy(() => Array.from(readFloats('float32', toBytes(tensor.float()))));
const floatsOf = (bytes: Uint8Array): number[] => Array.from(readFloats('float32', bytes));
const bits = (tensor: Tensor): string =>
  tidy(() => Buffer.from(toBytes(tensor.contiguous().to({ device: 'cpu' }))).toString('hex'));
const consensusOf = (name: string, shape: number[], values: number[], mass = 1): HostTensor => ({
  name,
  dtype: 'float32',
  shape,
  mass,
  bytes: writeFloats('float32', values),
});

function model(device: Device): Linear {
  manualSeed(7);
  return new Linear(3, 2).to(device);
}

describe.each(DEVICES)('averaging on $device', ({ device, skip }) => {
  it.skipIf(skip)('snapshots pre-scaled values as host bytes, kept for the model’s next snapshot', () => {
    const linear = model(device);
    const before = liveTensorCount();
    const snapshot = snapshotContribution(linear, 2);
    expect(snapshot.map((entry) => [entry.name, entry.mass, entry.dtype, entry.shape])).toEqual([
      ['p:weight', 2, 'float32', [2, 3]],
      ['p:bias', 2, 'float32', [2]],
    ]);
    expect(floatsOf(snapshot[0]!.bytes)).toEqual(
      floats(linear.weight).map((value) => Math.fround(value * 2)),
    );
    // The next snapshot writes the same bytes again: nothing is allocated per round.
    const again = snapshotContribution(linear, 5);
    expect(again[0]!.bytes).toBe(snapshot[0]!.bytes);
    expect(floatsOf(again[1]!.bytes)).toEqual(
      floats(linear.bias as Tensor).map((value) => Math.fround(value * 5)),
    );
    releaseSnapshotBuffers(linear);
    expect(snapshotContribution(linear, 5)[0]!.bytes).not.toBe(snapshot[0]!.bytes);
    expect(liveTensorCount()).toBe(before);
  });

  it.skipIf(skip)('writes a consensus back in place, on the parameter device and dtype', () => {
    const linear = model(device);
    const weight = linear.weight;
    const before = liveTensorCount();
    applyConsensus(linear, [consensusOf('p:weight', [2, 3], [1, 2, 3, 4, 5, 6])]);
    expect(linear.weight).toBe(weight);
    expect([weight.device, weight.dtype, weight.requiresGrad, weight.isLeaf]).toEqual([
      device,
      'float32',
      true,
      true,
    ]);
    expect(floats(weight)).toEqual([1, 2, 3, 4, 5, 6]);
    // EASGD blends on the device: (1 − α)·W + α·W_avg
    applyConsensus(linear, [consensusOf('p:weight', [2, 3], [3, 2, 1, 0, 5, -6])], { easgdAlpha: 0.5 });
    expect(floats(weight)).toEqual([2, 2, 2, 2, 5, 0]);
    expect(weight.device).toBe(device);
    expect(weight.gradFn).toBeNull();
    expect(liveTensorCount()).toBe(before);
  });

  it.skipIf(skip)('ships half-precision state as float32 and casts the consensus back', () => {
    const linear = model(device).to('bfloat16');
    const snapshot = snapshotContribution(linear, 3);
    expect(snapshot.map((entry) => entry.dtype)).toEqual(['float32', 'float32']);
    expect(floatsOf(snapshot[1]!.bytes)).toEqual(floats(linear.bias as Tensor).map((value) => value * 3));
    applyConsensus(linear, [consensusOf('p:bias', [2], [0.5, -1.25])]);
    expect([linear.bias?.dtype, linear.bias?.device]).toEqual(['bfloat16', device]);
    expect(floats(linear.bias as Tensor)).toEqual([0.5, -1.25]);
    expect(hostDtype('float64')).toBe('float64');
    expect(hostDtype('float16')).toBe('float32');
  });

  it.skipIf(skip)('averages float buffers and leaves integer buffers local', () => {
    const norm = new BatchNorm1d(2).to(device);
    const snapshot = snapshotContribution(norm, 4);
    expect(snapshot.map((entry) => [entry.name, entry.mass])).toEqual([
      ['p:weight', 4],
      ['p:bias', 4],
      ['b:running_mean', 1],
      ['b:running_var', 1],
    ]);
    applyConsensus(norm, [consensusOf('b:running_var', [2], [2, 3])]);
    const variance = (norm as Module).namedBuffers();
    const runningVar = [...variance].find(([name]) => name === 'running_var')?.[1] as Tensor;
    expect([runningVar.device, floats(runningVar)]).toEqual([device, [2, 3]]);
  });

  it.skipIf(skip)(
    'packs scaled tensors into a flat buffer and unpacks a share with its norms, bit for bit',
    () => {
      tidy(() => {
        manualSeed(3);
        const a = randn([4, 3], { device });
        const b = randn([3, 5], { device }).t(); // not contiguous: the libtorch path
        const wide = randn([6], { device, dtype: 'float64' });
        const flat = zeros([12 + 15], { device });
        aten.call('averagePack', [a, b], flat, 3);
        expect(floats(flat)).toEqual([...floats(a.mul(3)), ...floats(b.mul(3))]);
        const flatWide = zeros([6], { device, dtype: 'float64' });
        aten.call('averagePack', [wide], flatWide, 0.5);
        expect(bits(flatWide)).toBe(bits(wide.mul(0.5)));
        // Unpack: each tensor := its share / divisor, with [Σ pre², Σ (pre − post)², Σ post²].
        const pre = [a.clone(), b.clone()];
        const expected = [
          flat.narrow(0, 0, 12).view([4, 3]).div(7),
          flat.narrow(0, 12, 15).view([3, 5]).div(7),
        ];
        const norms = (aten.call('averageUnpack', [a, b], flat, 7, true) as Tensor).toArray() as number[];
        expect(bits(a)).toBe(bits(expected[0] as Tensor));
        expect(bits(b)).toBe(bits(expected[1] as Tensor));
        const sq = (values: number[]) => values.reduce((sum, value) => sum + value * value, 0);
        const before = [...floats(pre[0] as Tensor), ...floats(pre[1] as Tensor)];
        const after = [...floats(a), ...floats(b)];
        expect(norms[0]).toBeCloseTo(sq(before), 9);
        expect(norms[1]).toBeCloseTo(sq(before.map((value, index) => value - (after[index] as number))), 9);
        expect(norms[2]).toBeCloseTo(sq(after), 9);
        expect(aten.call('averageUnpack', [wide], flatWide, 2, false)).toBeUndefined();
        expect(bits(wide)).toBe(bits(flatWide.div(2)));
        // A bucket that does not fit its flat buffer is refused before anything is written.
        expect(() => aten.call('averagePack', [a], flat, 1)).toThrowError(
          expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
        );
        expect(() => aten.call('averagePack', [a, wide], flat, 1)).toThrowError(
          expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
        );
        expect(() => aten.call('averageUnpack', [a, b], flat, 0, true)).toThrowError(
          expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
        );
      });
    },
  );

  const backend = device === 'cpu' ? 'gloo' : 'nccl';
  it.skipIf(skip || !distributed.isAvailable(backend))(
    `runs the collective path on a one-rank ${backend} group, masses and norms on the device`,
    async () => {
      const linear = model(device);
      const original = floats(linear.weight);
      const group = createProcessGroup({
        backend,
        rank: 0,
        worldSize: 1,
        port: await freePort(),
        timeoutMs: 30_000,
        ...(backend === 'nccl' ? { device } : {}),
      });
      try {
        const before = liveTensorCount();
        const result = collectiveAverage(group, linear, 3);
        // One flat buffer for the parameters, kept for the next rounds, which add nothing.
        expect(liveTensorCount()).toBe(before + 1);
        collectiveAverage(group, linear, 3);
        expect(liveTensorCount()).toBe(before + 1);
        releaseCollectiveBuffers(linear);
        expect(liveTensorCount()).toBe(before);
        expect([result.totalMass, result.steppedRanks]).toEqual([3, 1]);
        expect(result.divergence).toBeLessThan(1e-6);
        expect(result.preNorm).toBeCloseTo(result.postNorm, 5);
        const expectedNorm = Math.sqrt(
          [...original, ...floats(linear.bias as Tensor)].reduce((sum, value) => sum + value * value, 0),
        );
        expect(result.postNorm).toBeCloseTo(expectedNorm, 5);
        expect(linear.weight.device).toBe(device);
        floats(linear.weight).forEach((value, index) => {
          expect(value).toBeCloseTo(original[index] as number, 6);
        });
      } finally {
        group.destroy();
      }
    },
  );
});

describe('the CPU packing loops on long float32 tensors (vector lanes where the CPU has them)', () => {
  it('scale, divide and sum the norms with the bits of one element at a time', () => {
    tidy(() => {
      manualSeed(11);
      // Lengths that leave tails behind eight- and four-float lanes; the sums' lanes run on
      // from one member to the next.
      const members = [randn([1027]), randn([13]), randn([2, 7])];
      const count = 1027 + 13 + 14;
      const flat = zeros([count]);
      aten.call('averagePack', members, flat, 2.7);
      const scale = Math.fround(2.7);
      const packed = members.flatMap((member) => floats(member).map((value) => Math.fround(value * scale)));
      expect(floats(flat)).toEqual(packed);

      const before = members.map(floats);
      const sums = aten.call('averageUnpack', members, flat, 3.3, true) as Tensor;
      // Element i of a member goes to lane i & 3 of each sum, each square rounded, then
      // (l0 + l1) + (l2 + l3): the norms in float64 to the bit.
      const by = Math.fround(3.3);
      const [preSq, diffSq, postSq] = [0, 1, 2].map(() => [0, 0, 0, 0]) as [number[], number[], number[]];
      const add = (lanes: number[], lane: number, value: number) => {
        lanes[lane] = (lanes[lane] as number) + value;
      };
      let offset = 0;
      before.forEach((values, index) => {
        const after = floats(members[index] as Tensor);
        values.forEach((pre, i) => {
          const post = Math.fround((packed[offset + i] as number) / by);
          expect(after[i]).toBe(post);
          const diff = pre - post;
          const lane = i & 3;
          add(preSq, lane, pre * pre);
          add(diffSq, lane, diff * diff);
          add(postSq, lane, post * post);
        });
        offset += values.length;
      });
      const total = (l: number[]) =>
        (l[0] as number) + (l[1] as number) + ((l[2] as number) + (l[3] as number));
      expect(sums.toArray()).toEqual([preSq, diffSq, postSq].map(total));

      // Without norms: the share alone.
      aten.call('averagePack', members, flat, 1);
      const again = members.flatMap(floats);
      expect(aten.call('averageUnpack', members, flat, 0.7, false)).toBeUndefined();
      const seven = Math.fround(0.7);
      expect(members.flatMap(floats)).toEqual(again.map((value) => Math.fround(value / seven)));
    });
  });
});
