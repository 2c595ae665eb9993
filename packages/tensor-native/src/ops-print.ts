// Printing: toString() in PyTorch's format (format.ts), attached by declaration merging so that
// tensor.ts does not import the formatter (which reads tensors).
import { formatTensor } from './format.js';
import { Tensor } from './tensor.js';

declare module './tensor.js' {
  interface Tensor {
    /** Prints like PyTorch: `tensor([[1., 2.], [3., 4.]], dtype=torch.float64)`. */
    toString(): string;
  }
}

Tensor.prototype.toString = function print(this: Tensor): string {
  if (this._h < 0) return 'tensor(<disposed>)';
  return formatTensor(this);
};
