// Where oneDNN is in the process (Debian's libtorch), the CPU kernels of aten::mm, aten::addmm and
// aten::bmm are oneDNN's sgemm for float32 operands in either strides order, so every product
// takes it: matmul, addmm, libtorch's own RNN layers and the backward of all of them. Each case
// is held to a float64 reference and to libtorch's kernels (the switch off), in values and
// gradients; what oneDNN does not take (other dtypes, layouts sgemm cannot read) is libtorch's.
import { spawnSync } from 'node:child_process';
import { backends, full, liveTensorCount, manualSeed, randn, type Tensor, tidy } from '@flodl/tensor-native';
import { afterEach, describe, expect, it } from 'vitest';
import { grad, lstm } from '../src/index.js';

const available = backends.cpu.oneDnnAvailable;
const CPU = { device: 'cpu' } as const;

afterEach(() => {
  if (available) backends.cpu.oneDnnLinear = true;
});

/** Largest |a − ref| over the largest |ref|. */
function relativeError(value: Tensor, reference: Tensor): number {
  return tidy(() => {
    const ref = reference.double();
    const scale = Math.max(ref.abs().max().item(), 1e-30);
    return value.double().sub(ref).abs().max().item() / scale;
  });
}

/** Operand layouts: as made, transposed in memory (the same values), a row-padded view. */
const LAYOUTS: Record<string, (rows: number, cols: number) => Tensor> = {
  'row-major': (rows, cols) => randn([rows, cols], CPU),
  'column-major': (rows, cols) => randn([cols, rows], CPU).t(),
  'padded rows': (rows, cols) => randn([rows, cols + 5], CPU).narrow(1, 2, cols),
};

describe.skipIf(!available)('float32 products on oneDNN (mm, addmm, bmm)', () => {
  for (const [left, makeLeft] of Object.entries(LAYOUTS)) {
    for (const [right, makeRight] of Object.entries(LAYOUTS)) {
      it(`mm of a ${left} and a ${right} operand, values and gradients`, () => {
        manualSeed(3);
        tidy(() => {
          const a = makeLeft(37, 53);
          const b = makeRight(53, 29);
          const probe = randn([37, 29], CPU);
          const reference = a.double().matmul(b.double());
          const gradients = (switchOn: boolean) => {
            backends.cpu.oneDnnLinear = switchOn;
            const [x, y] = [a.detach().requiresGrad_(), b.detach().requiresGrad_()];
            const out = x.matmul(y);
            return [out.detach(), ...grad([out.mul(probe).sum()], [x, y]).map((g) => g!)];
          };
          const ours = gradients(true);
          const theirs = gradients(false);
          const expected = [
            reference,
            probe.double().matmul(b.double().t()),
            a.double().t().matmul(probe.double()),
          ];
          for (let k = 0; k < 3; k++) {
            expect(relativeError(ours[k]!, expected[k]!)).toBeLessThan(1e-5);
            expect(relativeError(theirs[k]!, expected[k]!)).toBeLessThan(1e-5);
          }
        });
      });
    }
  }

  it('addmm with beta and alpha, a row or a full matrix added; beta 0 ignores the NaNs of self', () => {
    manualSeed(4);
    tidy(() => {
      const a = randn([12, 20], CPU);
      const b = randn([20, 9], CPU);
      const product = a.double().matmul(b.double());
      for (const self of [randn([9], CPU), randn([12, 9], CPU), randn([1, 9], CPU)]) {
        const out = self.addmm(a, b, { beta: 0.5, alpha: -2 });
        expect(out.shape).toEqual([12, 9]);
        expect(relativeError(out, self.double().mul(0.5).add(product.mul(-2)))).toBeLessThan(1e-5);
      }
      const square = randn([12, 9], CPU);
      const before = square.clone();
      square.addmm(a, b);
      expect(relativeError(square, before)).toBe(0); // self is read, never written
      const nan = full([12, 9], Number.NaN, CPU);
      expect(relativeError(nan.addmm(a, b, { beta: 0 }), product)).toBeLessThan(1e-5);
    });
  });

  it('bmm (and batched matmul) on contiguous, transposed and broadcast batches', () => {
    manualSeed(5);
    tidy(() => {
      const x = randn([6, 16, 24], CPU);
      const y = randn([6, 24, 12], CPU);
      const reference = x.double().matmul(y.double());
      expect(relativeError(x.matmul(y), reference)).toBeLessThan(1e-5);
      const yTransposed = y.transpose(1, 2).contiguous().transpose(1, 2);
      expect(relativeError(x.matmul(yTransposed), reference)).toBeLessThan(1e-5);
      const shared = randn([24, 12], CPU);
      const broadcast = shared.unsqueeze(0).expand([6, 24, 12]);
      expect(relativeError(x.matmul(broadcast), x.double().matmul(shared.double()))).toBeLessThan(1e-5);
    });
  });

  it("products under 2048 multiply-adds keep libtorch's kernel (quicker there), bit for bit", () => {
    manualSeed(8);
    tidy(() => {
      const a = randn([8, 8], CPU);
      const b = randn([8, 8], CPU);
      const on = a.matmul(b);
      backends.cpu.oneDnnLinear = false;
      expect(relativeError(a.matmul(b), on)).toBe(0);
    });
  });

  it('float64 products and the switch off take libtorch, which agrees', () => {
    manualSeed(6);
    tidy(() => {
      const a = randn([8, 8], { ...CPU, dtype: 'float64' });
      const b = randn([8, 8], { ...CPU, dtype: 'float64' });
      const on = a.matmul(b);
      backends.cpu.oneDnnLinear = false;
      expect(relativeError(a.matmul(b), on)).toBe(0);
    });
  });

  it("libtorch's LSTM layer trains on the products: output and gradients as the switch off", () => {
    manualSeed(7);
    tidy(() => {
      const input = randn([5, 3, 8], CPU);
      const weights = [randn([64, 8], CPU), randn([64, 16], CPU), randn([64], CPU), randn([64], CPU)].map(
        (w) => w.mul(0.2),
      );
      const runLstm = (switchOn: boolean) => {
        backends.cpu.oneDnnLinear = switchOn;
        const leaves = weights.map((w) => w.detach().requiresGrad_());
        const { output } = lstm(input, undefined, leaves, { numLayers: 1 });
        return [output.detach(), ...grad([output.sum()], leaves).map((g) => g!)];
      };
      const ours = runLstm(true);
      const theirs = runLstm(false);
      for (let k = 0; k < ours.length; k++) expect(relativeError(ours[k]!, theirs[k]!)).toBeLessThan(1e-5);
    });
  });

  it('loads without a warning on stderr, and keeps the live tensor count', () => {
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const t = await import('@flodl/tensor-native'); t.randn([4, 4]).matmul(t.randn([4, 4]));",
      ],
      { encoding: 'utf8', cwd: process.cwd() },
    );
    expect(child.status, child.stderr).toBe(0);
    expect(child.stderr).toBe('');
    const before = liveTensorCount();
    tidy(() => {
      randn([3, 4], CPU).matmul(randn([4, 2], CPU));
    });
    expect(liveTensorCount()).toBe(before);
  });
});
