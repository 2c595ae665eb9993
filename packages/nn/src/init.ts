// Parameter initialisation (PyTorch: torch.nn.init). Every function fills the tensor in
// place without recording gradients and draws from libtorch's generator, so with the same
// manualSeed the values equal PyTorch's.

import { noGrad } from '@flodl/autograd';
import { empty, FlodlError, invalidArgument, linalg, Tensor, tidy } from '@flodl/tensor-native';

/** Nonlinearities known to `calculateGain`. */
export type Nonlinearity =
  | 'linear'
  | 'conv1d'
  | 'conv2d'
  | 'conv3d'
  | 'conv_transpose1d'
  | 'conv_transpose2d'
  | 'conv_transpose3d'
  | 'sigmoid'
  | 'tanh'
  | 'relu'
  | 'leaky_relu'
  | 'selu';

/** The recommended gain for a nonlinearity. PyTorch: `nn.init.calculate_gain`. */
export function calculateGain(nonlinearity: Nonlinearity, param?: number): number {
  switch (nonlinearity) {
    case 'linear':
    case 'conv1d':
    case 'conv2d':
    case 'conv3d':
    case 'conv_transpose1d':
    case 'conv_transpose2d':
    case 'conv_transpose3d':
    case 'sigmoid':
      return 1;
    case 'tanh':
      return 5 / 3;
    case 'relu':
      return Math.sqrt(2);
    case 'leaky_relu': {
      const slope = param ?? 0.01;
      if (typeof slope !== 'number' || Number.isNaN(slope))
        throw invalidArgument('calculateGain', 'param', 'a number', param);
      return Math.sqrt(2 / (1 + slope * slope));
    }
    case 'selu':
      return 3 / 4;
    default:
      throw invalidArgument('calculateGain', 'nonlinearity', 'a known nonlinearity', nonlinearity);
  }
}

/** `[fanIn, fanOut]` of a weight: dims 1 and 0 times the receptive field. PyTorch: `_calculate_fan_in_and_fan_out`. */
export function calculateFanInAndFanOut(tensor: Tensor): [number, number] {
  const shape = tensor.shape;
  if (shape.length < 2) {
    throw new FlodlError('ERR_SHAPE', 'fan in and fan out need at least 2 dims', {
      op: 'calculateFanInAndFanOut',
      expected: 'a tensor with 2 or more dims',
      got: `[${shape.join(', ')}]`,
    });
  }
  const receptive = shape.slice(2).reduce((product, size) => product * size, 1);
  return [shape[1]! * receptive, shape[0]! * receptive];
}

function fan(tensor: Tensor, mode: 'fan_in' | 'fan_out'): number {
  if (mode !== 'fan_in' && mode !== 'fan_out')
    throw invalidArgument('init', 'mode', "'fan_in' or 'fan_out'", mode);
  const [fanIn, fanOut] = calculateFanInAndFanOut(tensor);
  return mode === 'fan_in' ? fanIn : fanOut;
}

const filling = <T extends Tensor>(tensor: T, fill: () => void): T => {
  noGrad(() => tidy(fill));
  return tensor;
};

/** Fills with U(a, b). PyTorch: `nn.init.uniform_`. */
export function uniform_<T extends Tensor>(tensor: T, a = 0, b = 1): T {
  return filling(tensor, () => tensor.uniform_(a, b));
}

/** Fills with N(mean, std²). PyTorch: `nn.init.normal_`. */
export function normal_<T extends Tensor>(tensor: T, mean = 0, std = 1): T {
  return filling(tensor, () => tensor.normal_(mean, std));
}

/** Fills with `value`. PyTorch: `nn.init.constant_`. */
export function constant_<T extends Tensor>(tensor: T, value: number): T {
  return filling(tensor, () => tensor.fill_(value));
}

/** Fills with 0. */
export function zeros_<T extends Tensor>(tensor: T): T {
  return constant_(tensor, 0);
}

/** Fills with 1. */
export function ones_<T extends Tensor>(tensor: T): T {
  return constant_(tensor, 1);
}

/** U(-a, a) with a = gain·√(6 / (fanIn + fanOut)). PyTorch: `nn.init.xavier_uniform_`. */
export function xavierUniform_<T extends Tensor>(tensor: T, gain = 1): T {
  const [fanIn, fanOut] = calculateFanInAndFanOut(tensor);
  // The same operation order as PyTorch, so the bound is the same double.
  const std = gain * Math.sqrt(2 / (fanIn + fanOut));
  const bound = Math.sqrt(3) * std;
  return uniform_(tensor, -bound, bound);
}

/** N(0, std²) with std = gain·√(2 / (fanIn + fanOut)). PyTorch: `nn.init.xavier_normal_`. */
export function xavierNormal_<T extends Tensor>(tensor: T, gain = 1): T {
  const [fanIn, fanOut] = calculateFanInAndFanOut(tensor);
  return normal_(tensor, 0, gain * Math.sqrt(2 / (fanIn + fanOut)));
}

/** Options of the Kaiming initialisers. */
export interface KaimingOptions {
  /** The negative slope of the rectifier after this layer (leaky_relu). Default 0. */
  a?: number;
  /** Preserve the variance of the forward ('fan_in', default) or backward pass ('fan_out'). */
  mode?: 'fan_in' | 'fan_out';
  /** Default 'leaky_relu'. */
  nonlinearity?: Nonlinearity;
}

/** U(-bound, bound) with bound = gain·√(3 / fan). PyTorch: `nn.init.kaiming_uniform_`. */
export function kaimingUniform_<T extends Tensor>(tensor: T, options: KaimingOptions = {}): T {
  const { a = 0, mode = 'fan_in', nonlinearity = 'leaky_relu' } = options;
  const std = calculateGain(nonlinearity, a) / Math.sqrt(fan(tensor, mode));
  const bound = Math.sqrt(3) * std;
  return uniform_(tensor, -bound, bound);
}

/** N(0, std²) with std = gain / √fan. PyTorch: `nn.init.kaiming_normal_`. */
export function kaimingNormal_<T extends Tensor>(tensor: T, options: KaimingOptions = {}): T {
  const { a = 0, mode = 'fan_in', nonlinearity = 'leaky_relu' } = options;
  return normal_(tensor, 0, calculateGain(nonlinearity, a) / Math.sqrt(fan(tensor, mode)));
}

/**
 * N(mean, std²) truncated to [a, b], by inverse-CDF sampling as PyTorch does.
 * PyTorch: `nn.init.trunc_normal_`.
 */
export function truncNormal_<T extends Tensor>(tensor: T, mean = 0, std = 1, a = -2, b = 2): T {
  const cdf = (x: number) => (1 + erf(x / Math.SQRT2)) / 2;
  const lower = cdf((a - mean) / std);
  const upper = cdf((b - mean) / std);
  return filling(tensor, () => {
    tensor.uniform_(2 * lower - 1, 2 * upper - 1);
    tensor.erfinv_();
    tensor.mul_(std * Math.SQRT2);
    tensor.add_(mean);
    tensor.clamp_(a, b);
  });
}

/**
 * A (semi-)orthogonal matrix from the QR decomposition of a normal sample, scaled by `gain`;
 * extra dims are flattened. PyTorch: `nn.init.orthogonal_`.
 */
export function orthogonal_<T extends Tensor>(tensor: T, gain = 1): T {
  const shape = tensor.shape;
  if (shape.length < 2) {
    throw new FlodlError('ERR_SHAPE', 'orthogonal_ needs at least 2 dims', {
      op: 'orthogonal_',
      got: `[${shape.join(', ')}]`,
    });
  }
  if (tensor.numel === 0) return tensor;
  const rows = shape[0]!;
  const columns = tensor.numel / rows;
  return filling(tensor, () => {
    let flat = empty([rows, columns], { dtype: tensor.dtype, device: tensor.device }).normal_(0, 1);
    if (rows < columns) flat = flat.t();
    const { Q, R } = linalg.qr(flat);
    let q = Q.mul(R.diag().sign());
    if (rows < columns) q = q.t();
    tensor.view([...q.shape]).copy_(q);
    tensor.mul_(gain);
  });
}

/** The error function, computed by libtorch in float64 (the C library's erf, as Python's math.erf). */
function erf(x: number): number {
  return tidy(() => Tensor.from([x], undefined, { dtype: 'float64' }).erf().item() as number);
}
