// Autograd on Tensor, over libtorch's own engine: requires-grad flags, `.grad`, `backward`.
// As in PyTorch, a Tensor is the autograd variable: every op on tensors that require grad is
// recorded by libtorch and differentiable. @flodl/autograd adds Variable, grad-mode scopes,
// the differentiable functional ops and gradcheck on top of these members.

import { isFloatingPoint } from './dtype.js';
import { FlodlError, invalidArgument } from './errors.js';
import * as autograd from './internal/autograd-state.js';
import { diagnose } from './internal/diagnose.js';
import { checkOptions } from './internal/validate.js';
import { Tensor } from './tensor.js';

/** Options of `Tensor.backward`. */
export interface BackwardOptions {
  /** Keep the graph so that backward can run through it again. Default false. */
  retainGraph?: boolean;
  /** Record the backward pass itself, for higher-order gradients. Default false. */
  createGraph?: boolean;
}

declare module './tensor.js' {
  interface Tensor {
    /** True when autograd records ops on this tensor. PyTorch: `t.requires_grad`. */
    readonly requiresGrad: boolean;
    /** True for tensors not produced by a recorded op (user-created, or not requiring grad). PyTorch: `t.is_leaf`. */
    readonly isLeaf: boolean;
    /** The name of the op that produced this tensor in the graph, e.g. `AddBackward0`; null for leaves. */
    readonly gradFn: string | null;
    /**
     * The gradient accumulated by `backward` (a new handle on it), or null. PyTorch: `t.grad`.
     * Disposing the returned handle does not clear the gradient; use `zeroGrad()` for that.
     */
    readonly grad: Tensor | null;
    /** Turns recording on or off for this leaf, in place. PyTorch: `t.requires_grad_()`. @throws FlodlError ERR_AUTOGRAD for integer dtypes */
    requiresGrad_(requiresGrad?: boolean): Tensor;
    /** Replaces the accumulated gradient (null clears it). @throws FlodlError ERR_SHAPE / ERR_DTYPE / ERR_DEVICE on a mismatch */
    setGrad(gradient: Tensor | null): void;
    /** Clears the gradient (set to none: no kernel runs). PyTorch: `t.grad = None`. */
    zeroGrad(): void;
    /** Keeps `.grad` on this non-leaf tensor after backward. PyTorch: `t.retain_grad()`. */
    retainGrad(): void;
    /**
     * Computes the gradient of this tensor with respect to every leaf that requires grad and
     * accumulates it into their `.grad`. A non-scalar tensor needs `gradOutput` (same shape).
     * Without `retainGraph` the graph is released at once. PyTorch: `t.backward()`.
     * @throws FlodlError ERR_AUTOGRAD when the tensor does not require grad, is not a scalar and
     *   has no gradOutput, or its graph was already released
     */
    backward(gradOutput?: Tensor, options?: BackwardOptions): void;
    /**
     * Swaps in `source`'s data, dtype and device while keeping this tensor's identity (so
     * optimizers and modules that hold it see the change). PyTorch: `t.data = source`.
     */
    setData(source: Tensor): void;
    /** Cuts this tensor from its graph in place. PyTorch: `t.detach_()`. */
    detach_(): Tensor;
    /** The number of in-place changes made to this tensor's data. PyTorch: `t._version`. */
    readonly version: number;
    /** The same data as a leaf outside any graph (a new handle). PyTorch: `t.data`. */
    readonly data: Tensor;
    /**
     * True for an inference tensor: one made inside `inferenceMode` (its version counter and
     * autograd metadata are never kept). Outside inference mode it cannot be saved for a
     * backward pass nor changed in place (ERR_NATIVE, libtorch's text kept); `clone()` it
     * there to get a normal tensor. PyTorch: `t.is_inference()`.
     */
    readonly isInference: boolean;
  }
}

const proto = Tensor.prototype;

Object.defineProperty(proto, 'requiresGrad', {
  get(this: Tensor) {
    return autograd.requiresGrad(this._h);
  },
});
Object.defineProperty(proto, 'isLeaf', {
  get(this: Tensor) {
    return autograd.isLeaf(this._h);
  },
});
Object.defineProperty(proto, 'gradFn', {
  get(this: Tensor) {
    return autograd.gradFn(this._h);
  },
});
Object.defineProperty(proto, 'grad', {
  get(this: Tensor) {
    const handle = autograd.grad(this._h);
    return handle === null ? null : new Tensor(handle);
  },
});
Object.defineProperty(proto, 'data', {
  get(this: Tensor) {
    return new Tensor(autograd.variableData(this._h));
  },
});
Object.defineProperty(proto, 'isInference', {
  get(this: Tensor) {
    return autograd.isInference(this._h);
  },
});
Object.defineProperty(proto, 'version', {
  get(this: Tensor) {
    return autograd.version(this._h);
  },
});

proto.requiresGrad_ = function requiresGrad_(this: Tensor, requiresGrad = true): Tensor {
  if (typeof requiresGrad !== 'boolean')
    throw invalidArgument('requiresGrad_', 'requiresGrad', 'a boolean', requiresGrad);
  if (requiresGrad && !isFloatingPoint(this.dtype)) {
    throw new FlodlError('ERR_AUTOGRAD', 'only floating-point tensors can require gradients', {
      op: 'requiresGrad_',
      expected: 'float16, bfloat16, float32 or float64',
      got: this.dtype,
    });
  }
  if (!requiresGrad && !this.isLeaf) {
    throw new FlodlError(
      'ERR_AUTOGRAD',
      'only leaf tensors can stop requiring gradients; use detach() on results',
      {
        op: 'requiresGrad_',
      },
    );
  }
  autograd.setRequiresGrad(this._h, requiresGrad);
  return this;
};

proto.setGrad = function setGrad(this: Tensor, gradient: Tensor | null): void {
  if (gradient === null) {
    autograd.setGrad(this._h, undefined);
    return;
  }
  if (!(gradient instanceof Tensor))
    throw invalidArgument('setGrad', 'gradient', 'a Tensor or null', gradient);
  const same = (
    what: string,
    mine: string,
    theirs: string,
    code: 'ERR_SHAPE' | 'ERR_DTYPE' | 'ERR_DEVICE',
  ) => {
    if (mine !== theirs) {
      throw new FlodlError(code, `the gradient's ${what} differs from the tensor's`, {
        op: 'setGrad',
        expected: mine,
        got: theirs,
      });
    }
  };
  same('shape', `[${this.shape.join(', ')}]`, `[${gradient.shape.join(', ')}]`, 'ERR_SHAPE');
  same('dtype', this.dtype, gradient.dtype, 'ERR_DTYPE');
  same('device', this.device, gradient.device, 'ERR_DEVICE');
  autograd.setGrad(this._h, gradient._h);
};

proto.zeroGrad = function zeroGrad(this: Tensor): void {
  autograd.setGrad(this._h, undefined);
};

proto.retainGrad = function retainGrad(this: Tensor): void {
  if (!this.requiresGrad) {
    throw new FlodlError('ERR_AUTOGRAD', "can't retain the gradient of a tensor that does not require grad", {
      op: 'retainGrad',
    });
  }
  autograd.retainGrad(this._h);
};

proto.setData = function setData(this: Tensor, source: Tensor): void {
  if (!(source instanceof Tensor)) throw invalidArgument('setData', 'source', 'a Tensor', source);
  try {
    autograd.setData(this._h, source._h);
  } catch (error) {
    throw diagnose('setData', { self: this, source }, error, 'none');
  }
  this._shape = undefined;
  this._dtype = undefined;
};

proto.detach_ = function detach_(this: Tensor): Tensor {
  try {
    autograd.detachInPlace(this._h);
  } catch (error) {
    throw diagnose('detach_', { self: this }, error);
  }
  return this;
};

proto.backward = function backward(this: Tensor, gradOutput?: Tensor, options: BackwardOptions = {}): void {
  checkOptions('backward', options, ['retainGraph', 'createGraph']);
  if (!autograd.requiresGrad(this._h)) {
    throw new FlodlError('ERR_AUTOGRAD', 'this tensor does not require grad and has no grad_fn', {
      op: 'backward',
      expected:
        'a result of ops on tensors with requiresGrad (or the graph was already released by backward)',
      got: this.describe(),
    });
  }
  if (gradOutput === undefined) {
    if (this.numel !== 1) {
      throw new FlodlError('ERR_AUTOGRAD', 'a non-scalar output needs a gradOutput', {
        op: 'backward',
        expected: `backward(gradOutput) with gradOutput of shape [${this.shape.join(', ')}]`,
        got: 'no gradOutput',
      });
    }
  } else if (!(gradOutput instanceof Tensor)) {
    throw invalidArgument('backward', 'gradOutput', 'a Tensor', gradOutput);
  } else if (gradOutput.shape.join(',') !== this.shape.join(',')) {
    throw new FlodlError('ERR_SHAPE', 'gradOutput must have the shape of the output', {
      op: 'backward',
      expected: `[${this.shape.join(', ')}]`,
      got: `[${gradOutput.shape.join(', ')}]`,
    });
  }
  const retain = options.retainGraph === true || options.createGraph === true;
  try {
    autograd.backward(this._h, gradOutput?._h, retain, options.createGraph === true, true);
  } catch (error) {
    throw diagnose('backward', { self: this, gradOutput }, error);
  }
};

/**
 * Gradients of `outputs` with respect to `inputs`, returned instead of accumulated into
 * `.grad`. PyTorch: `torch.autograd.grad`.
 */
export function autogradGrad(
  outputs: Tensor | Tensor[],
  inputs: Tensor | Tensor[],
  options: {
    gradOutputs?: Tensor[];
    retainGraph?: boolean;
    createGraph?: boolean;
    allowUnused?: boolean;
  } = {},
): (Tensor | null)[] {
  checkOptions('autograd.grad', options, ['gradOutputs', 'retainGraph', 'createGraph', 'allowUnused']);
  const outputList = Array.isArray(outputs) ? outputs : [outputs];
  const inputList = Array.isArray(inputs) ? inputs : [inputs];
  for (const [name, list] of [
    ['outputs', outputList],
    ['inputs', inputList],
  ] as const) {
    list.forEach((item, k) => {
      if (!(item instanceof Tensor))
        throw invalidArgument('autograd.grad', `${name}[${k}]`, 'a Tensor', item);
    });
  }
  let handles: (number | null)[];
  try {
    handles = autograd.gradients(
      outputList.map((tensor) => tensor._h),
      inputList.map((tensor) => tensor._h),
      options.gradOutputs?.map((tensor) => tensor._h),
      options.retainGraph,
      options.createGraph === true,
      options.allowUnused === true,
    );
  } catch (error) {
    throw diagnose('autograd.grad', {}, error);
  }
  return handles.map((handle) => (handle === null ? null : new Tensor(handle)));
}

/** True when autograd records ops on this thread. PyTorch: `torch.is_grad_enabled()`. */
export function isGradEnabled(): boolean {
  return autograd.isGradEnabled();
}

/** Turns recording on or off for this thread (prefer the scoped `noGrad`/`enableGrad`). */
export function setGradEnabled(enabled: boolean): void {
  if (typeof enabled !== 'boolean') throw invalidArgument('setGradEnabled', 'enabled', 'a boolean', enabled);
  autograd.setGradEnabled(enabled);
}
