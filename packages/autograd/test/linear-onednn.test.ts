// Float32 linear maps on the CPU go to oneDNN's sgemm where libtorch brought it into the process
// (Debian's libtorch does), everything else to libtorch's linear. Each case runs both and a
// float64 reference: values and every gradient within float32 rounding of the reference, the
// autograd node ours only where it should be, second derivatives through either path.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  backends,
  liveTensorCount,
  manualSeed,
  randn,
  runWithAutocast,
  type Tensor,
  tidy,
} from '@flodl/tensor-native';
import { expectFlodlError } from '@flodl/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { F, grad } from '../src/index.js';

const available = backends.cpu.oneDnnAvailable;
/** Every tensor here is on the CPU, whatever the default device (the CUDA tier runs this file too). */
const CPU = { device: 'cpu' } as const;

afterEach(() => {
  if (available) backends.cpu.oneDnnLinear = true;
});

type Case = { input: number[]; out: number; bias: boolean };
const CASES: Case[] = [
  { input: [32, 64], out: 64, bias: true },
  { input: [32, 64], out: 10, bias: false },
  { input: [1, 7], out: 3, bias: true },
  { input: [5], out: 4, bias: true },
  { input: [2, 3, 9], out: 6, bias: true },
  { input: [4, 2, 3, 17], out: 5, bias: false },
  { input: [128, 784], out: 128, bias: true },
];

type Run = { output: Float32Array; grads: Float32Array[]; node: string | null };

/** output and the gradients of sum(output · probe) in (input, weight, bias), as float32 arrays. */
function run(input: Tensor, weight: Tensor, bias: Tensor | undefined, probe: Tensor): Run {
  return tidy(() => {
    const leaves = [input, weight, bias].filter((t): t is Tensor => t !== undefined);
    const variables = leaves.map((t) => t.detach().requiresGrad_());
    const output = F.linear(variables[0]!, variables[1]!, bias === undefined ? undefined : variables[2]);
    const grads = grad([output.mul(probe.to(output.dtype)).sum()], variables);
    const floats = (t: Tensor) => t.to('float32').toTypedArray() as Float32Array;
    return { output: floats(output.detach()), grads: grads.map((g) => floats(g!)), node: output.gradFn };
  });
}

/** Largest |a − ref| over the largest |ref| (1 when ref is all zeros). */
function relativeError(values: Float32Array, reference: Float32Array): number {
  let error = 0;
  let scale = 0;
  for (let k = 0; k < reference.length; k++) {
    error = Math.max(error, Math.abs(values[k]! - reference[k]!));
    scale = Math.max(scale, Math.abs(reference[k]!));
  }
  return error / (scale || 1);
}

function tensors({ input, out, bias }: Case) {
  const inFeatures = input[input.length - 1]!;
  return {
    input: randn(input, CPU),
    weight: randn([out, inFeatures], CPU),
    bias: bias ? randn([out], CPU) : undefined,
    probe: randn([...input.slice(0, -1), out], CPU),
  };
}

describe.skipIf(!available)('float32 linear maps by oneDNN', () => {
  it.each(CASES)('agree with libtorch and a float64 reference (input %j)', (shape) => {
    manualSeed(3);
    const before = liveTensorCount();
    tidy(() => {
      const { input, weight, bias, probe } = tensors(shape);
      const ours = run(input, weight, bias, probe);
      backends.cpu.oneDnnLinear = false;
      const libtorch = run(input, weight, bias, probe);
      backends.cpu.oneDnnLinear = true;
      const reference = run(input.to('float64'), weight.to('float64'), bias?.to('float64'), probe);
      expect(ours.node).toMatch(/LinearCpuFunction/);
      expect(libtorch.node).not.toMatch(/LinearCpuFunction/);
      const bound = 1e-5 * Math.sqrt(shape.input[shape.input.length - 1]!);
      for (const side of [ours, libtorch]) {
        expect(relativeError(side.output, reference.output)).toBeLessThan(bound);
        side.grads.forEach((g, k) => {
          expect(relativeError(g, reference.grads[k]!), `gradient ${k}`).toBeLessThan(bound);
        });
      }
      expect(ours.grads).toHaveLength(shape.bias ? 3 : 2);
    });
    expect(liveTensorCount()).toBe(before);
  });

  it('skips the gradients nobody asked for and builds no node without one', () => {
    manualSeed(4);
    tidy(() => {
      const input = randn([8, 6], CPU);
      const weight = randn([3, 6], CPU).requiresGrad_();
      const output = F.linear(input, weight);
      expect(output.gradFn).toMatch(/LinearCpuFunction/);
      output.sum().backward();
      expect(input.grad).toBeNull();
      expect(weight.grad!.shape).toEqual([3, 6]);
      expect(F.linear(input, randn([3, 6], CPU)).gradFn).toBeNull();
    });
  });

  it('hands non-contiguous, float64 and autocast inputs to libtorch, bit for bit its result', () => {
    manualSeed(5);
    tidy(() => {
      const weight = randn([4, 6], CPU);
      const transposed = randn([6, 8], CPU).t().requiresGrad_();
      const strided = F.linear(transposed, weight);
      expect(strided.gradFn).not.toMatch(/LinearCpuFunction/);
      // libtorch's linear is its matmul, whose product is the CPU mm kernel (oneDNN's while the
      // switch is on, matmul-onednn.test.ts): the same values as that product of the operands.
      expect(Array.from(strided.toTypedArray() as Float32Array)).toEqual(
        Array.from(transposed.matmul(weight.t()).toTypedArray() as Float32Array),
      );
      backends.cpu.oneDnnLinear = false;
      expect(
        relativeError(
          strided.toTypedArray() as Float32Array,
          F.linear(transposed, weight).toTypedArray() as Float32Array,
        ),
      ).toBeLessThan(1e-5);
      backends.cpu.oneDnnLinear = true;
      const double = randn([8, 6], { dtype: 'float64', device: 'cpu' }).requiresGrad_();
      expect(
        F.linear(double, weight.to('float64'), randn([4], { dtype: 'float64', device: 'cpu' })).gradFn,
      ).toBe('AddmmBackward0');
      const input = randn([8, 6], CPU).requiresGrad_();
      const cast = runWithAutocast('cpu', 'bfloat16', true, () => F.linear(input, weight));
      expect(cast.dtype).toBe('bfloat16');
      expect(cast.gradFn).not.toMatch(/LinearCpuFunction/);
    });
  });

  it('gives second derivatives through the gradient (create_graph)', () => {
    manualSeed(6);
    tidy(() => {
      const input = randn([5, 4], CPU).requiresGrad_();
      const weight = randn([3, 4], CPU).requiresGrad_();
      const bias = randn([3], CPU).requiresGrad_();
      const second = (): Float32Array[] => {
        const output = F.linear(input, weight, bias);
        const [gInput, gWeight] = grad([output.tanh().sum()], [input, weight], { createGraph: true });
        const mixed = grad([gInput!.square().sum().add(gWeight!.square().sum())], [input, weight, bias]);
        return mixed.map((g) => g!.toTypedArray() as Float32Array);
      };
      const ours = second();
      backends.cpu.oneDnnLinear = false;
      const libtorch = second();
      ours.forEach((g, k) => {
        expect(relativeError(g, libtorch[k]!), `second derivative ${k}`).toBeLessThan(1e-5);
      });
    });
  });

  it('refuses a backward after a saved tensor changed in place, as libtorch does', () => {
    tidy(() => {
      const input = randn([4, 3], CPU).requiresGrad_();
      const weight = randn([2, 3], CPU).requiresGrad_();
      const output = F.linear(input, weight);
      weight.detach().mul_(2);
      expect(() => output.sum().backward()).toThrow(/modified by an inplace operation/);
    });
  });

  it('can be switched off, and FLODL_GEMM=libtorch starts with it off', () => {
    backends.cpu.oneDnnLinear = false;
    expect(backends.cpu.oneDnnLinear).toBe(false);
    backends.cpu.oneDnnLinear = true;
    expect(backends.cpu.oneDnnLinear).toBe(true);
    expect(() => {
      backends.cpu.oneDnnLinear = 'yes' as never;
    }).toThrow(/oneDnnLinear/);
    expect(() => {
      (backends.cpu as { oneDnnAvailable: boolean }).oneDnnAvailable = false;
    }).toThrow(TypeError);
    const entry = fileURLToPath(import.meta.resolve('@flodl/tensor-native'));
    const read = (value: string | undefined) =>
      execFileSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const { backends } = await import(${JSON.stringify(entry)}); console.log(backends.cpu.oneDnnLinear)`,
        ],
        { env: { ...process.env, FLODL_GEMM: value }, encoding: 'utf8' },
      ).trim();
    expect(read('libtorch')).toBe('false');
    expect(read('onednn')).toBe('true');
  });
});

/**
 * Trains a linear map in a child process for `steps` steps while signals reach it: the CPU
 * profiler's SIGPROF every 50 µs (`--cpu-prof`) and, from here, SIGUSR2 to the process 20 times
 * a millisecond (process-directed, so any of its threads may take it). Resolves with how the
 * child ended and the last line it printed.
 */
function trainUnderSignals(
  threads: number,
  steps: number,
): Promise<{ code: number | null; signal: string | null; last: string; stderr: string }> {
  const entry = fileURLToPath(import.meta.resolve('@flodl/tensor-native'));
  const dir = mkdtempSync(join(tmpdir(), 'flodl-onednn-signals-'));
  const script = `
    const t = await import(${JSON.stringify(entry)});
    t.setNumThreads(${threads});
    process.on('SIGUSR2', () => {});
    const x = t.randn([128, 784]).requiresGrad_();
    const w = t.randn([256, 784]).requiresGrad_();
    const b = t.randn([256]).requiresGrad_();
    console.log('ready');
    for (let i = 0; i < ${steps}; i++)
      t.tidy(() => { t.autogradGrad([t.aten.call('linear', x, w, b).sum()], [x, w, b]); });
    console.log('done');
    setTimeout(() => {}, 300); // the storm stops on 'done'; exit once no signal is in flight`;
  const child = spawn(
    process.execPath,
    ['--cpu-prof', '--cpu-prof-interval', '50', '--cpu-prof-dir', dir, '--input-type=module', '-e', script],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  let storm: ReturnType<typeof setInterval> | undefined;
  const stop = () => clearInterval(storm);
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk;
    if (stdout.includes('done')) stop();
    else if (stdout.includes('ready') && storm === undefined)
      storm = setInterval(() => {
        for (let k = 0; k < 20; k++) child.kill('SIGUSR2');
      }, 1);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      stop();
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, signal, last: stdout.trim().split('\n').at(-1) ?? '', stderr });
    });
  });
}

describe.skipIf(!available)('oneDNN linear maps under signals', () => {
  // oneDNN's generated GEMM kernels (up to 3.11) run with the stack pointer in a heap workspace;
  // a signal taken meanwhile wrote its frame there, and the process aborted in malloc soon after
  // (every run of this test did before the products held signals).
  it.each([1, 2])(
    'trains on through signals with %i thread(s)',
    async (threads) => {
      const ended = await trainUnderSignals(threads, 1500);
      expect(ended.stderr).toBe('');
      expect(ended).toMatchObject({ code: 0, signal: null, last: 'done' });
    },
    60_000,
  );
});

describe.skipIf(available)('without oneDNN in the process', () => {
  it('keeps libtorch and refuses to switch on', () => {
    expect(backends.cpu.oneDnnLinear).toBe(false);
    expectFlodlError(() => {
      backends.cpu.oneDnnLinear = true;
    }, 'ERR_DEVICE');
  });
});
