import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { arange, liveTensorCount, randn, Tensor, tidy, toBytes, zeros } from '@flodl/tensor-native';
import { caught } from '@flodl/testing';
import { afterAll, describe, expect, it } from 'vitest';
import {
  load,
  Module,
  Parameter,
  readSafetensors,
  readSafetensorsMetadata,
  save,
  writeSafetensors,
} from '../src/index.js';
import { onHost } from './golden.js';

const fixtures = new URL('./fixtures/', import.meta.url).pathname;
const workspace = mkdtempSync(join(tmpdir(), 'flodl-safetensors-'));
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

/** The same recipe as scripts/make-goldens-safetensors.py. */
function recipe(): Record<string, Tensor> {
  return {
    'weight.f32': arange(12, { dtype: 'float32' }).reshape(3, 4).mul(0.25).sub(1),
    'weight.f64': arange(6, { dtype: 'float64' }).div(3),
    'weight.f16': arange(8, { dtype: 'float32' }).mul(0.5).half(),
    'weight.bf16': arange(8, { dtype: 'float32' }).mul(-0.25).bfloat16(),
    'count.i32': arange(5, { dtype: 'int32' }),
    'count.i64': arange(-3, 3, 1, { dtype: 'int64' }),
    'mask.bool': arange(6).remainder(2).eq(0),
    'bytes.u8': arange(4, { dtype: 'uint8' }).mul(60),
    scalar: Tensor.from(3.5),
    empty: zeros([0, 2]),
  };
}

describe('safetensors', () => {
  it('round-trips every dtype, 0-dim and empty tensors, and metadata', () =>
    tidy(() => {
      const path = join(workspace, 'round-trip.safetensors');
      const tensors = recipe();
      writeSafetensors(path, tensors, { note: 'hello' });
      const read = readSafetensors(path);
      expect(read.metadata).toEqual({ note: 'hello' });
      expect(Object.keys(read.tensors).sort()).toEqual(Object.keys(tensors).sort());
      for (const [name, tensor] of Object.entries(tensors)) {
        const back = read.tensors[name]!;
        expect(back.dtype, name).toBe(tensor.dtype);
        expect(back.shape, name).toEqual(tensor.shape);
        expect(back.eq(tensor).all().item(), name).toBe(true);
      }
    }));

  it('reads a file written by PyTorch', () =>
    tidy(() => {
      const expected = JSON.parse(readFileSync(join(fixtures, 'from-pytorch.json'), 'utf8')) as Record<
        string,
        { dtype: string; shape: number[]; values: (number | boolean)[] }
      >;
      const { tensors, metadata } = readSafetensors(join(fixtures, 'from-pytorch.safetensors'));
      expect(metadata.producer).toBe('pytorch');
      for (const [name, entry] of Object.entries(expected)) {
        const tensor = tensors[name]!;
        expect(tensor.shape, name).toEqual(entry.shape);
        const values =
          tensor.dtype === 'bool' ? tensor.toArray() : tensor.to('float64').reshape(-1).toArray();
        expect([values].flat(8) as unknown[], name).toEqual(entry.values);
      }
    }));

  it('writes exactly the bytes that PyTorch verified (from-flodl.safetensors)', () =>
    tidy(() => {
      const path = join(workspace, 'from-flodl.safetensors');
      // Made on the CPU: CUDA divides by a scalar through its reciprocal, one ulp away for 5/3.
      writeSafetensors(path, onHost(recipe), { producer: 'flodl' });
      const committed = join(fixtures, 'from-flodl.safetensors');
      if (process.env.FLODL_WRITE_FIXTURES === '1' || !existsSync(committed)) copyFileSync(path, committed);
      // Tensor by tensor first (a mismatch then names the tensor), then the whole file.
      const ours = readSafetensors(path);
      const theirs = readSafetensors(committed);
      expect(Object.keys(ours.tensors)).toEqual(Object.keys(theirs.tensors));
      for (const [name, tensor] of Object.entries(theirs.tensors)) {
        expect(Buffer.from(toBytes(ours.tensors[name]!)).toString('hex'), name).toBe(
          Buffer.from(toBytes(tensor)).toString('hex'),
        );
      }
      expect(ours.metadata).toEqual(theirs.metadata);
      expect(readFileSync(path).equals(readFileSync(committed))).toBe(true);
    }));

  it('rejects truncated and corrupt files with ERR_CHECKPOINT', () =>
    tidy(() => {
      const good = join(workspace, 'good.safetensors');
      writeSafetensors(good, recipe());
      const bytes = readFileSync(good);
      const cases: [string, Buffer][] = [
        ['tiny', bytes.subarray(0, 5)],
        ['truncated data', bytes.subarray(0, bytes.length - 3)],
        ['truncated header', bytes.subarray(0, 20)],
        [
          'huge header length',
          Buffer.concat([Buffer.from([255, 255, 255, 255, 255, 255, 255, 127]), bytes.subarray(8)]),
        ],
        [
          'not json',
          Buffer.concat([
            bytes.subarray(0, 8),
            Buffer.from('{'.padEnd(Number(bytes.readBigUInt64LE(0)), 'x')),
            bytes.subarray(8 + Number(bytes.readBigUInt64LE(0))),
          ]),
        ],
      ];
      const header = (entries: object) => {
        const text = Buffer.from(JSON.stringify(entries));
        const prefix = Buffer.alloc(8);
        prefix.writeBigUInt64LE(BigInt(text.length));
        return Buffer.concat([prefix, text, Buffer.alloc(16)]);
      };
      cases.push(['bad dtype', header({ a: { dtype: 'F8', shape: [1], data_offsets: [0, 1] } })]);
      cases.push(['wrong size', header({ a: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } })]);
      cases.push(['outside the data', header({ a: { dtype: 'F32', shape: [8], data_offsets: [0, 32] } })]);
      cases.push(['negative shape', header({ a: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } })]);
      cases.push([
        'overlap',
        header({
          a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
          b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
        }),
      ]);
      const before = liveTensorCount();
      for (const [name, content] of cases) {
        const path = join(workspace, `${name.replace(/ /g, '-')}.safetensors`);
        writeFileSync(path, content);
        expect(caught(() => readSafetensors(path)).code, name).toBe('ERR_CHECKPOINT');
        // The header-only reader checks the same sizes without reading the data.
        expect(caught(() => readSafetensorsMetadata(path)).code, name).toBe('ERR_CHECKPOINT');
      }
      expect(liveTensorCount()).toBe(before);
      writeSafetensors(good, recipe(), { run: 'r1' });
      expect(readSafetensorsMetadata(good)).toEqual({ run: 'r1' });
      expect(caught(() => readSafetensors(join(workspace, 'missing.safetensors'))).code).toBe('ERR_IO');
    }));

  it('writes atomically: a failed write leaves the previous file intact', () =>
    tidy(() => {
      const path = join(workspace, 'atomic.safetensors');
      writeSafetensors(path, { a: arange(4) });
      const before = readFileSync(path);
      expect(
        caught(() => writeSafetensors(join(workspace, 'no-such-dir', 'x.safetensors'), { a: arange(4) }))
          .code,
      ).toBe('ERR_IO');
      const notAFolder = join(workspace, 'plain-file');
      writeFileSync(notAFolder, 'x');
      expect(caught(() => writeSafetensors(join(notAFolder, 'x.safetensors'), { a: arange(4) })).code).toBe(
        'ERR_IO',
      );
      expect(readFileSync(path).equals(before)).toBe(true);
      truncateSync(path, 0);
      expect(caught(() => readSafetensors(path)).code).toBe('ERR_CHECKPOINT');
    }));

  it("feeds a digest the file's exact bytes as it writes them", () =>
    tidy(() => {
      const path = join(workspace, 'digest.safetensors');
      const digest = createHash('sha256');
      writeSafetensors(path, onHost(recipe), { producer: 'flodl' }, { digest });
      expect(digest.digest('hex')).toBe(createHash('sha256').update(readFileSync(path)).digest('hex'));
    }));
});

class Small extends Module {
  weight = new Parameter(randn([3, 2]));
  bias = new Parameter(zeros([3]));
  forward(input: Tensor): Tensor {
    return input.matmul(this.weight.t()).add(this.bias);
  }
}

describe('save / load', () => {
  it('saves a module and loads it into another; a bad file leaves the target untouched', () => {
    const path = join(workspace, 'small.safetensors');
    const source = new Small();
    const target = new Small();
    save(source, path);
    const report = load(target, path);
    expect(report.loaded.sort()).toEqual(['bias', 'weight']);
    expect(tidy(() => target.weight.allclose(source.weight))).toBe(true);
    const snapshot = tidy(() => target.weight.clone());
    writeSafetensors(path, { weight: zeros([2, 2]), bias: zeros([3]) });
    expect(caught(() => load(target, path)).code).toBe('ERR_SHAPE');
    writeSafetensors(path, { weight: zeros([3, 2]) });
    expect(caught(() => load(target, path)).code).toBe('ERR_CHECKPOINT');
    expect(tidy(() => target.weight.allclose(snapshot))).toBe(true);
    expect(load(target, path, { strict: false }).missing).toEqual(['bias']);
    for (const tensor of [snapshot]) tensor.dispose();
    source.dispose();
    target.dispose();
  });
});

describe('optimizer checkpoints', () => {
  it('saves Adam beside the model and resumes exactly', async () => {
    const { Adam, saveOptimizer, loadOptimizer, SGD } = await import('../src/index.js');
    const path = join(workspace, 'adam.safetensors');
    const modelPath = join(workspace, 'model.safetensors');
    const before = liveTensorCount();
    const input = randn([8, 2]);
    const train = (model: Small, optimizer: InstanceType<typeof Adam>, steps: number) => {
      for (let k = 0; k < steps; k++) {
        tidy(() => {
          optimizer.zeroGrad();
          model.forward(input).square().mean().backward();
          optimizer.step();
        });
      }
    };
    const original = new Small();
    const adam = new Adam(original.parameters(), { lr: 0.05, amsgrad: true });
    train(original, adam, 5);
    save(original, modelPath);
    saveOptimizer(adam, path);
    const resumed = new Small();
    load(resumed, modelPath);
    const resumedAdam = new Adam(resumed.parameters(), { lr: 0.05, amsgrad: true });
    loadOptimizer(resumedAdam, path);
    train(original, adam, 5);
    train(resumed, resumedAdam, 5);
    expect(tidy(() => resumed.weight.eq(original.weight).all().item())).toBe(true);
    const sgd = new SGD(resumed.parameters(), { lr: 0.1 });
    expect(caught(() => loadOptimizer(sgd, path)).code).toBe('ERR_CHECKPOINT');
    expect(caught(() => loadOptimizer(sgd, modelPath)).code).toBe('ERR_CHECKPOINT');
    for (const optimizer of [adam, resumedAdam, sgd]) optimizer.dispose();
    original.dispose();
    resumed.dispose();
    input.dispose();
    expect(liveTensorCount()).toBe(before);
  });
});
