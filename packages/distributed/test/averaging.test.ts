import { Linear } from '@flodl/nn';
import { fromBytes, manualSeed, toBytes } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import {
  applyConsensus,
  ConsensusBuffers,
  easgdBlendHost,
  type HostTensor,
  MassAccumulator,
  prescaleHost,
  readFloats,
  snapshotContribution,
  windowMass,
  writeFloats,
} from '../src/averaging/index.js';
import { foldRound } from '../src/host/host-reduce.js';
import type { ReceivedContribution } from '../src/wire/data-channel.js';
import type { ControlServer } from '../src/wire/server.js';

const host = (name: string, values: number[], mass = 0): HostTensor => ({
  name,
  dtype: 'float32',
  shape: [values.length],
  mass,
  bytes: writeFloats('float32', values),
});
const values = (tensor: HostTensor | undefined): number[] => Array.from(readFloats('float32', tensor!.bytes));

describe('mass-law averaging', () => {
  it('shapes the mass by gamma and excludes zero-step windows', () => {
    expect(windowMass(4)).toBe(4);
    expect(windowMass(4, 0.5)).toBe(2);
    expect(windowMass(0)).toBe(0);
    expect(() => windowMass(-1)).toThrow(/steps/);
  });

  it('holds exactly when ranks did unequal work: Σ m·W / Σ m, one division', () => {
    // rank 0: 3 steps, rank 1: 1 step, rank 2: 4 steps (exact dyadic arithmetic)
    const root = new MassAccumulator();
    root.add(0, [
      prescaleHost(host('p:w', [1, 2, -4]), windowMass(3)),
      prescaleHost(host('b:m', [8, 0, 0]), 1),
    ]);
    root.add(1, [
      prescaleHost(host('p:w', [5, 6, 4]), windowMass(1)),
      prescaleHost(host('b:m', [0, 4, 0]), 1),
    ]);
    root.add(2, [
      prescaleHost(host('p:w', [0.5, 2, 1]), windowMass(4)),
      prescaleHost(host('b:m', [0, 0, 2]), 1),
    ]);
    const consensus = root.average();
    const weight = consensus.find((tensor) => tensor.name === 'p:w');
    expect(weight?.mass).toBe(8);
    // (3·1 + 1·5 + 4·0.5) / 8 = 1.25; (6 + 6 + 8) / 8 = 2.5; (−12 + 4 + 4) / 8 = −0.5
    expect(values(weight)).toEqual([1.25, 2.5, -0.5]);
    // buffers: equal weight among ranks that stepped
    expect(values(consensus.find((tensor) => tensor.name === 'b:m'))).toEqual(
      [8 / 3, 4 / 3, 2 / 3].map(Math.fround),
    );
    expect(root.accepted).toEqual([0, 1, 2]);
  });

  it('writes into a kept buffer set round after round, the same values as fresh buffers', () => {
    const round = (scale: number) => {
      const root = new MassAccumulator();
      root.add(0, [prescaleHost(host('p:w', [1 * scale, 2, -4]), windowMass(3))]);
      root.add(1, [prescaleHost(host('p:w', [5, 6 * scale, 4]), windowMass(1))]);
      return root;
    };
    const buffers = new ConsensusBuffers();
    const first = round(1).average(buffers);
    const firstBytes = first[0]!.bytes;
    expect(values(first[0])).toEqual(values(round(1).average()[0]));
    // The next round writes the same memory: the earlier consensus now reads the new values.
    const second = round(3).average(buffers);
    expect(second[0]!.bytes.buffer).toBe(firstBytes.buffer);
    expect(values(second[0])).toEqual(values(round(3).average()[0]));
    expect(values(first[0])).toEqual(values(second[0]));
    // Another length gets a buffer of its own.
    const other = new MassAccumulator();
    other.add(0, [prescaleHost(host('p:w', [1, 2]), windowMass(1))]);
    expect(other.average(buffers)[0]!.bytes.buffer).not.toBe(firstBytes.buffer);
  });

  it('computes a later consensus as it is read, prefix by prefix, bit for bit the eager one', () => {
    for (const count of [1, 2, 3, 10]) {
      const make = () => {
        const root = new MassAccumulator();
        for (let rank = 0; rank < count; rank++) {
          const weights = Array.from(
            { length: 1000 },
            (_, k) => Math.sin(k * (rank + 1)) * 10 ** ((k % 9) - 4),
          );
          root.add(rank, [prescaleHost(host('p:w', weights), windowMass(rank + 1))]);
        }
        return root;
      };
      const [eager] = make().average();
      const [later] = make().averageLater();
      // 1000 float32 values: the first 100 (400 bytes), then 16 bytes more, then the rest.
      const prefix = later!.upTo(400);
      expect(prefix.byteLength).toBe(4000);
      expect(prefix.subarray(0, 400)).toEqual(eager!.bytes.subarray(0, 400));
      expect(prefix.subarray(416, 4000).every((byte) => byte === 0)).toBe(true);
      expect(later!.upTo(416).subarray(0, 416)).toEqual(eager!.bytes.subarray(0, 416));
      expect(later!.bytes).toEqual(eager!.bytes);
      expect(later!.mass).toBe(eager!.mass);
    }
  });

  it('divides by the mass of exactly the accepted contributions (a zero-step rank enters neither)', () => {
    const root = new MassAccumulator();
    root.add(0, [prescaleHost(host('p:w', [2, 4]), windowMass(2))]);
    root.add(1, [prescaleHost(host('p:w', [100, 100]), windowMass(0))]);
    root.add(2, [prescaleHost(host('p:w', [8, 16]), windowMass(6))]);
    const [weight] = root.average();
    expect(weight?.mass).toBe(8);
    expect(values(weight)).toEqual([(2 * 2 + 8 * 6) / 8, (4 * 2 + 16 * 6) / 8]);
    expect(() => root.add(2, [])).toThrow(/rank/);
    expect(() => root.add(3, [host('p:w', [1, 2, 3], 1)])).toThrow(/p:w/);
    expect(new MassAccumulator().average()).toEqual([]);
  });

  it('sums in float64 in arrival order and rounds once, for 1 to 12 contributions (float32 and float64)', () => {
    for (const dtype of ['float32', 'float64'] as const) {
      for (let count = 1; count <= 12; count += 1) {
        const root = new MassAccumulator();
        const sources: number[][] = [];
        for (let rank = 0; rank < count; rank += 1) {
          // Not dyadic: the order of the additions shows in the last bits; -0 stays a sum from 0.
          const contribution = [0.1 * (rank + 1), -1 / (rank + 3), rank === 0 ? -0 : 1e-8 * rank, 7777.7];
          sources.push(contribution);
          const array =
            dtype === 'float32' ? Float32Array.from(contribution) : Float64Array.from(contribution);
          root.add(rank, [
            { name: 'p:w', dtype, shape: [4], mass: rank + 1, bytes: new Uint8Array(array.buffer) },
          ]);
        }
        const mass = (count * (count + 1)) / 2;
        const round = dtype === 'float32' ? Math.fround : (value: number) => value;
        const expected = sources[0]!.map((_, index) => {
          let sum = 0;
          for (const source of sources) sum += round(source[index]!);
          return round(sum / mass);
        });
        const [consensus] = root.average();
        expect(consensus!.mass).toBe(mass);
        expect(Array.from(readFloats(dtype, consensus!.bytes)), `${dtype}, ${count} contributions`).toEqual(
          expected,
        );
      }
    }
  });

  it('blends with EASGD: (1 − α)·W + α·W_avg', () => {
    expect(easgdBlendHost([1, 2], [3, -2], 0.25)).toEqual([1.5, 1]);
    expect(() => easgdBlendHost([1], [1], 0)).toThrow(/alpha/);
  });

  it('snapshots a model pre-scaled by its mass and applies a consensus (overwrite and EASGD)', () => {
    manualSeed(1);
    const model = new Linear(2, 1);
    const snapshot = snapshotContribution(model, 3);
    expect(snapshot.map((entry) => [entry.name, entry.mass])).toEqual([
      ['p:weight', 3],
      ['p:bias', 3],
    ]);
    const weight = model.weight;
    const original = Array.from(new Float32Array(toBytes(weight).slice().buffer));
    expect(Array.from(new Float32Array(snapshot[0]!.bytes.slice().buffer))).toEqual(
      original.map((v) => Math.fround(v * 3)),
    );
    applyConsensus(model, [{ ...host('p:weight', [1, 2], 2), shape: [1, 2] }]);
    expect(Array.from(new Float32Array(toBytes(weight).slice().buffer))).toEqual([1, 2]);
    applyConsensus(model, [{ ...host('p:weight', [3, -2], 2), shape: [1, 2] }], { easgdAlpha: 0.25 });
    expect(Array.from(new Float32Array(toBytes(weight).slice().buffer))).toEqual([1.5, 1]);
    // An entry nobody weighted (mass 0) leaves the tensor as it is, in both forms.
    applyConsensus(model, [{ ...host('p:weight', [9, 9]), shape: [1, 2] }]);
    applyConsensus(model, [{ ...host('p:weight', [9, 9]), shape: [1, 2] }], { easgdAlpha: 0.25 });
    expect(Array.from(new Float32Array(toBytes(weight).slice().buffer))).toEqual([1.5, 1]);
    expect(() => applyConsensus(model, [host('p:nope', [1])])).toThrow(/p:nope/);
    expect(fromBytes(writeFloats('float32', [1]), [1], 'float32').item()).toBe(1);
  });
});

describe('the host reduce of one round', () => {
  // foldRound reads the server only to lend the folded buffers back to each data channel.
  const server = { dataChannelOf: () => undefined } as unknown as ControlServer;
  const contribution = (version: number, mass: number, weight: number[]): ReceivedContribution =>
    ({
      version,
      tensors: [
        {
          ...host(
            'p:weight',
            weight.map((value) => value * mass),
            mass,
          ),
          index: 0,
          tensorCount: 2,
        },
        { ...host('p:bias', [mass * 0.5], mass), index: 1, tensorCount: 2 },
      ],
    }) as unknown as ReceivedContribution;

  it('divides the summed contributions once by the summed mass of the accepted ranks', () => {
    const received = new Map([
      [0, contribution(4, 1, [1, 2])],
      [1, contribution(4, 3, [5, 6])],
    ]);
    const round = foldRound('test', server, 4, [0, 1], received);
    expect(round.masses).toEqual({ 0: 1, 1: 3 });
    expect(round.totalMass).toBe(4);
    expect(values(round.consensus.find((tensor) => tensor.name === 'p:weight'))).toEqual([4, 5]);
  });

  it('a round nobody trained in (every mass 0) yields one mass-0 tensor that leaves the model as it is', () => {
    const received = new Map([
      [0, contribution(7, 0, [1, 2])],
      [1, contribution(7, 0, [5, 6])],
    ]);
    const round = foldRound('test', server, 7, [0, 1], received);
    expect(round.totalMass).toBe(0);
    expect(round.consensus.map((tensor) => [tensor.name, tensor.mass])).toEqual([['p:bias', 0]]);
    manualSeed(3);
    const model = new Linear(2, 1);
    const before = toBytes(model.bias!).slice();
    applyConsensus(model, round.consensus);
    expect(toBytes(model.bias!)).toEqual(before);
  });

  it('rejects a contribution of another round and an empty accepted set', () => {
    const received = new Map([[0, contribution(2, 1, [1, 2])]]);
    expect(() => foldRound('test', server, 3, [0], received)).toThrow(/rank 0 sent round 2 for round 3/);
    expect(() => foldRound('test', server, 3, [], received)).toThrow(/accepted/);
  });
});
