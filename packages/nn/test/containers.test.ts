// ParameterList against PyTorch's nn.ParameterList (scripts/make-goldens-containers.py): the
// state_dict keys and values, the parameters' order, printing, moves and safetensors.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { arange, type DType, liveTensorCount, type Tensor, tidy, zeros } from '@flodl/tensor-native';
import { expectFlodlError } from '@flodl/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { Adam, Linear, load, Module, ModuleList, Parameter, ParameterList, save } from '../src/index.js';
import { readFixture } from './golden.js';

interface ContainersFixture {
  stateDict: { name: string; shape: number[]; dtype: DType; data: number[] }[];
  namedParameters: string[];
  lengths: Record<string, number>;
  requiresGrad: boolean[];
  reprList: string;
  reprEmpty: string;
  reprModel: string;
}

const fixture = readFixture('containers.json') as ContainersFixture;
const folder = mkdtempSync(join(tmpdir(), 'flodl-containers-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** arange(numel) * scale, reshaped: the script's `ramp`. */
function ramp(shape: number[], scale = 0.1, dtype: DType = 'float32'): Tensor {
  const count = shape.reduce((product, size) => product * size, 1);
  return tidy(() => arange(count, { dtype }).mul(scale).reshape(shape));
}

class Inner extends Module<never[], never> {
  scales = new ParameterList([ramp([3], 0.5)]);
  forward(): never {
    throw new Error('not used');
  }
}

class Model extends Module<never[], never> {
  weights = new ParameterList([ramp([2, 3]), ramp([3], 0.2)]);
  head = new Linear(3, 2);
  blocks = new ModuleList([new Inner()]);
  constructor() {
    super();
    this.weights.append(ramp([4, 1], 0.3, 'float64'));
    this.weights.extend([ramp([1], 0.4), ramp([2, 2], 0.7)]);
    this.head.weight.setData(ramp([2, 3], -0.1));
    this.head.bias!.setData(ramp([2], 0.05));
  }
  forward(): never {
    throw new Error('not used');
  }
}

function values(tensor: Tensor): number[] {
  return Array.from(tensor.toTypedArray() as Float32Array | Float64Array);
}

describe('ParameterList against PyTorch 1.13', () => {
  it('names its parameters 0, 1, … under the parent, in the state dict and the parameters', () => {
    const model = new Model();
    const state = model.stateDict();
    expect(Object.keys(state)).toEqual(fixture.stateDict.map((entry) => entry.name));
    for (const entry of fixture.stateDict) {
      const tensor = state[entry.name]!;
      expect([tensor.shape, tensor.dtype], entry.name).toEqual([entry.shape, entry.dtype]);
      const got = values(tensor);
      for (const [k, value] of entry.data.entries()) expect(got[k]).toBeCloseTo(value, 6);
      tensor.dispose();
    }
    expect([...model.namedParameters()].map(([name]) => name)).toEqual(fixture.namedParameters);
    expect(model.weights.length).toBe(fixture.lengths.weights);
    expect(model.blocks.at(0) instanceof Inner && model.blocks.at(0).scales.length).toBe(
      fixture.lengths['blocks.0.scales'],
    );
    expect([...model.weights].map((parameter) => parameter.requiresGrad)).toEqual(fixture.requiresGrad);
    expect([...model.weights].every((parameter) => parameter instanceof Parameter)).toBe(true);
    model.dispose();
  });

  it('prints as PyTorch prints it', () => {
    const model = new Model();
    expect(String(model.weights)).toBe(fixture.reprList);
    expect(String(new ParameterList())).toBe(fixture.reprEmpty);
    expect(String(model)).toBe(fixture.reprModel);
    model.dispose();
  });
});

describe('ParameterList', () => {
  it('indexes, iterates, appends and extends; a Parameter is kept as it is (shared)', () => {
    const shared = new Parameter(zeros([2]));
    const list = new ParameterList([ramp([2])]);
    list.append(shared).extend([ramp([3]), ramp([1])]);
    expect(list.length).toBe(4);
    expect(list.at(1)).toBe(shared);
    expect(list[1]).toBe(shared);
    expect(list.at(-1).shape).toEqual([1]);
    expect(list[4]).toBeUndefined();
    expect([...list].map((parameter) => parameter.shape[0])).toEqual([2, 2, 3, 1]);
    expect(list.parameters()).toEqual([...list]);
    // A parameter listed twice is handed to optimizers once, as PyTorch's parameters() does.
    list.append(shared);
    expect(list.length).toBe(5);
    expect(list.parameters().length).toBe(4);
    list.dispose();
  });

  it('trains through an optimizer and moves with to(), keeping identities', () => {
    const model = new Model();
    const first = model.weights.at(0);
    const before = values(first);
    const optimizer = new Adam(model.parameters(), { lr: 0.1 });
    tidy(() => first.sum().add(model.weights.at(2).sum()).backward());
    optimizer.step();
    // Adam's first step moves every parameter with a gradient by lr against its sign.
    expect(values(first).map((value, k) => Math.round((before[k]! - value) * 1e6) / 1e6)).toEqual(
      new Array(6).fill(0.1),
    );
    model.to('float64');
    expect(model.weights.at(0)).toBe(first);
    expect([...model.weights].map((parameter) => parameter.dtype)).toEqual(new Array(5).fill('float64'));
    optimizer.dispose();
    model.dispose();
  });

  it('round-trips through safetensors into a fresh model', () => {
    const source = new Model();
    tidy(() => source.weights.at(3).setData(ramp([1]).add(7)));
    const path = join(folder, 'parameter-list.safetensors');
    save(source, path);
    const target = new Model();
    const report = load(target, path);
    expect(report.loaded.sort()).toEqual(fixture.stateDict.map((entry) => entry.name).sort());
    for (let k = 0; k < source.weights.length; k++) {
      expect(values(target.weights.at(k))).toEqual(values(source.weights.at(k)));
    }
    expect(values(target.weights.at(3))).toEqual([7]);
    source.dispose();
    target.dispose();
  });

  it('refuses what is not a tensor, bad indices and forward, naming them', () => {
    const live = liveTensorCount();
    const list = new ParameterList([ramp([2])]);
    expect(expectFlodlError(() => list.at(3), 'ERR_INVALID_ARGUMENT').message).toMatchInlineSnapshot(`
      "ParameterList.at: index out of range
        expected: an integer index in [-1, 0]
        got: 3"
    `);
    expectFlodlError(() => list.at(0.5), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new ParameterList().at(0), 'ERR_INVALID_ARGUMENT');
    expect(
      expectFlodlError(() => list.append([1, 2] as never), 'ERR_INVALID_ARGUMENT').message,
    ).toMatchInlineSnapshot(`
      "ParameterList.append: invalid parameter
        expected: a Tensor (or a Parameter)
        got: [1, 2]"
    `);
    tidy(() => expectFlodlError(() => list.extend([zeros([1]), 3] as never), 'ERR_INVALID_ARGUMENT'));
    expect(list.length).toBe(1); // nothing of a refused extend is appended
    expectFlodlError(() => new ParameterList(5 as never), 'ERR_INVALID_ARGUMENT');
    tidy(() => expectFlodlError(() => list.append(zeros([2], { dtype: 'int64' })), 'ERR_AUTOGRAD'));
    expectFlodlError(() => list.forward(), 'ERR_INVALID_ARGUMENT');
    list.dispose();
    expect(liveTensorCount()).toBe(live);
  });
});
