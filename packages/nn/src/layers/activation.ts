// A module for every activation of the functional layer (PyTorch: nn.ReLU, nn.GELU, ...).
import {
  elu,
  gelu,
  hardsigmoid,
  hardswish,
  leakyRelu,
  logSoftmax,
  mish,
  prelu,
  relu,
  selu,
  sigmoid,
  silu,
  softmax,
  softplus,
  tanh,
} from '@flodl/autograd';
import { full, type Tensor } from '@flodl/tensor-native';
import { Module } from '../module.js';
import { Parameter } from '../parameter.js';
import {
  checkOptions,
  FACTORY_KEYS,
  type FactoryOptions,
  factoryOf,
  positiveInteger,
  pythonFloat,
} from './common.js';

/** `max(0, x)`. PyTorch: `nn.ReLU`. */
export class ReLU extends Module {
  forward(input: Tensor): Tensor {
    return relu(input);
  }
}

/** `max(0, x) + negativeSlope·min(0, x)`. PyTorch: `nn.LeakyReLU(negative_slope=0.01)`. */
export class LeakyReLU extends Module {
  constructor(readonly negativeSlope = 0.01) {
    super();
  }
  forward(input: Tensor): Tensor {
    return leakyRelu(input, { negativeSlope: this.negativeSlope });
  }
  override extraRepr(): string {
    return `negative_slope=${pythonFloat(this.negativeSlope)}`;
  }
}

/** `x` if x > 0 else `alpha·(eˣ − 1)`. PyTorch: `nn.ELU(alpha=1.0)`. */
export class ELU extends Module {
  constructor(readonly alpha = 1) {
    super();
  }
  forward(input: Tensor): Tensor {
    return elu(input, { alpha: this.alpha });
  }
  override extraRepr(): string {
    return `alpha=${pythonFloat(this.alpha)}`;
  }
}

/** Scaled ELU with fixed constants. PyTorch: `nn.SELU`. */
export class SELU extends Module {
  forward(input: Tensor): Tensor {
    return selu(input);
  }
}

/** Gaussian error linear unit, exact or tanh-approximated. PyTorch: `nn.GELU(approximate='none')`. */
export class GELU extends Module {
  constructor(readonly approximate: 'none' | 'tanh' = 'none') {
    super();
  }
  forward(input: Tensor): Tensor {
    return gelu(input, { approximate: this.approximate });
  }
  override extraRepr(): string {
    return `approximate='${this.approximate}'`;
  }
}

/** `x·σ(x)`. PyTorch: `nn.SiLU`. */
export class SiLU extends Module {
  forward(input: Tensor): Tensor {
    return silu(input);
  }
}

/** `x·tanh(softplus(x))`. PyTorch: `nn.Mish`. */
export class Mish extends Module {
  forward(input: Tensor): Tensor {
    return mish(input);
  }
}

/** `log(1 + e^{βx})/β`, linear above `threshold`. PyTorch: `nn.Softplus(beta=1, threshold=20)`. */
export class Softplus extends Module {
  constructor(
    readonly beta = 1,
    readonly threshold = 20,
  ) {
    super();
  }
  forward(input: Tensor): Tensor {
    return softplus(input, { beta: this.beta, threshold: this.threshold });
  }
  override extraRepr(): string {
    return `beta=${this.beta}, threshold=${this.threshold}`;
  }
}

/** PyTorch: `nn.Tanh`. */
export class Tanh extends Module {
  forward(input: Tensor): Tensor {
    return tanh(input);
  }
}

/** PyTorch: `nn.Sigmoid`. */
export class Sigmoid extends Module {
  forward(input: Tensor): Tensor {
    return sigmoid(input);
  }
}

/** `x·relu6(x+3)/6`. PyTorch: `nn.Hardswish`. */
export class Hardswish extends Module {
  forward(input: Tensor): Tensor {
    return hardswish(input);
  }
}

/** `relu6(x+3)/6`. PyTorch: `nn.Hardsigmoid`. */
export class Hardsigmoid extends Module {
  forward(input: Tensor): Tensor {
    return hardsigmoid(input);
  }
}

/**
 * `max(0, x) + a·min(0, x)` with a learned slope `a` (one, or one per channel), initialised
 * to `init`, created as `options` say (PyTorch's factory options `dtype`, `device`).
 * PyTorch: `nn.PReLU(num_parameters=1, init=0.25, device=None, dtype=None)`.
 */
export class PReLU extends Module {
  readonly numParameters: number;
  weight: Tensor;
  constructor(numParameters = 1, initialSlope = 0.25, options: FactoryOptions = {}) {
    super();
    checkOptions('PReLU', options, FACTORY_KEYS);
    this.numParameters = positiveInteger('PReLU', 'numParameters', numParameters);
    const factory = { dtype: 'float32' as const, ...factoryOf('PReLU', options) };
    this.weight = new Parameter(full([numParameters], initialSlope, factory));
  }
  forward(input: Tensor): Tensor {
    return prelu(input, this.weight);
  }
  override extraRepr(): string {
    return `num_parameters=${this.numParameters}`;
  }
}

/** Softmax along `dim`. PyTorch: `nn.Softmax(dim)`. */
export class Softmax extends Module {
  constructor(readonly dim: number) {
    super();
  }
  forward(input: Tensor): Tensor {
    return softmax(input, this.dim);
  }
  override extraRepr(): string {
    return `dim=${this.dim}`;
  }
}

/** Log-softmax along `dim`. PyTorch: `nn.LogSoftmax(dim)`. */
export class LogSoftmax extends Module {
  constructor(readonly dim: number) {
    super();
  }
  forward(input: Tensor): Tensor {
    return logSoftmax(input, this.dim);
  }
  override extraRepr(): string {
    return `dim=${this.dim}`;
  }
}
