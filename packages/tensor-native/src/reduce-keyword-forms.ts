// The options forms of the reductions on Tensor (`x.mean({ dim: 1, keepdim: true })`), each
// reached from its positional method in ops-reduce.ts once the first argument is an object.
// `more` is true when positional arguments followed the object.
import { describeValue, FlodlError, invalidArgument } from './errors.js';
import { dims } from './internal/dims.js';
import { call, callMany } from './internal/methods.js';
import { nativeOps } from './internal/native-ops.js';
import { checkBoolean, checkInt, checkNonNegativeInteger, checkScalar } from './internal/validate.js';
import {
  type AlongOptions,
  type AmaxOptions,
  type ArgmaxOptions,
  type CountNonzeroOptions,
  type DimOptions,
  keywordDims,
  keywordDtype,
  keywordKeepdim,
  keywords,
  type LogsumexpOptions,
  noArgumentsAfter,
  type ProdOptions,
  type SpreadOptions,
  type SumOptions,
  type VectorNormOptions,
} from './reduce-options.js';
import { normalizeDim, type Tensor } from './tensor.js';

// The addon entries this file calls (see internal/native-ops.ts).
const native = nativeOps(
  'sum',
  'mean',
  'prod',
  'maxDim',
  'minDim',
  'amax',
  'amin',
  'argmax',
  'argmin',
  'std',
  'var',
  'norm',
  'logsumexp',
  'softmax',
  'logSoftmax',
  'cumsum',
  'cumprod',
  'all',
  'any',
  'countNonzero',
);

// sum({ dim, keepdim, dtype }) and mean alike; without dim, keepdim keeps every dim as size 1.
export function sumWith(op: 'sum' | 'mean', self: Tensor, form: object, more: boolean): Tensor {
  noArgumentsAfter(op, more);
  const given = keywords<SumOptions>(op, form, ['dim', 'keepdim', 'dtype']);
  const dtype = keywordDtype(op, given.dtype);
  const keep = keywordKeepdim(op, given.keepdim);
  const list = keywordDims(op, self, given.dim, keep);
  const run = native[op];
  return call(op, { self }, () => run(self._h, list, keep, dtype));
}

export function prodWith(self: Tensor, form: object, more: boolean): Tensor {
  noArgumentsAfter('prod', more);
  const given = keywords<ProdOptions>('prod', form, ['dim', 'keepdim', 'dtype']);
  const dtype = keywordDtype('prod', given.dtype);
  const keep = keywordKeepdim('prod', given.keepdim);
  if (given.dim === undefined) {
    if (keep) throw keepdimNeedsDim('prod');
    return call('prod', { self }, () => native.prod(self._h, undefined, false, dtype));
  }
  const single = checkInt('prod', 'dim', given.dim);
  normalizeDim('prod', single, self.ndim);
  return call('prod', { self }, () => native.prod(self._h, single, keep, dtype));
}

export function extremumWith(
  op: 'max' | 'min',
  self: Tensor,
  form: object,
  more: boolean,
): { values: Tensor; indices: Tensor } {
  noArgumentsAfter(op, more);
  const given = keywords<DimOptions>(op, form, ['dim', 'keepdim']);
  if (given.dim === undefined) {
    throw invalidArgument(
      op,
      'dim',
      `an integer: ${op}({ dim }) reduces along one dim (${op}() for all)`,
      undefined,
    );
  }
  const dim = given.dim;
  normalizeDim(op, dim, self.ndim);
  const keep = keywordKeepdim(op, given.keepdim);
  const run = op === 'max' ? native.maxDim : native.minDim;
  const [values, indices] = callMany(op, { self }, () => run(self._h, dim, keep));
  return { values: values!, indices: indices! };
}

export function amaxWith(op: 'amax' | 'amin', self: Tensor, form: object, more: boolean): Tensor {
  noArgumentsAfter(op, more);
  const given = keywords<AmaxOptions>(op, form, ['dim', 'keepdim']);
  const keep = keywordKeepdim(op, given.keepdim);
  // PyTorch's default dim=() reduces every dim.
  const list = keywordDims(op, self, given.dim, true) ?? [];
  const run = native[op];
  return call(op, { self }, () => run(self._h, list, keep));
}

// argmax / argmin / all / any: one optional dim and keepdim (argmax keeps every dim as size 1
// without one, as PyTorch's does; all and any take keepdim only with a dim).
export function oneDimWith(
  op: 'argmax' | 'argmin' | 'all' | 'any',
  self: Tensor,
  form: object,
  more: boolean,
): Tensor {
  noArgumentsAfter(op, more);
  const given = keywords<ArgmaxOptions>(op, form, ['dim', 'keepdim']);
  const keep = keywordKeepdim(op, given.keepdim);
  const keepsWithoutDim = op === 'argmax' || op === 'argmin';
  if (given.dim === undefined && keep && !keepsWithoutDim) throw keepdimNeedsDim(op);
  if (given.dim !== undefined) normalizeDim(op, checkInt(op, 'dim', given.dim), self.ndim);
  const run = native[op];
  return call(op, { self }, () => run(self._h, given.dim, keep));
}

export function spreadWith(op: 'std' | 'var', self: Tensor, form: object, more: boolean): Tensor {
  noArgumentsAfter(op, more);
  const given = keywords<SpreadOptions>(op, form, ['dim', 'keepdim', 'correction', 'unbiased']);
  const keep = keywordKeepdim(op, given.keepdim);
  const correction = spreadCorrection(op, given);
  const list = keywordDims(op, self, given.dim, false);
  const run = native[op];
  return call(op, { self }, () => run(self._h, list, true, keep, correction));
}

// PyTorch takes `correction` or `unbiased`, never both; the default is Bessel's correction, 1.
function spreadCorrection(op: string, given: SpreadOptions): number {
  if (given.correction !== undefined && given.unbiased !== undefined) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'correction and unbiased say the same thing: give one', {
      op,
      expected: '{ correction } (any integer >= 0) or { unbiased } (correction 1 or 0)',
      got: `{ correction: ${describeValue(given.correction)}, unbiased: ${describeValue(given.unbiased)} }`,
    });
  }
  if (given.unbiased !== undefined) return checkBoolean(op, 'unbiased', given.unbiased) ? 1 : 0;
  if (given.correction === undefined) return 1;
  return checkNonNegativeInteger(op, 'correction', given.correction);
}

export function normWith(self: Tensor, form: object, more: boolean): Tensor {
  noArgumentsAfter('norm', more);
  const given = keywords<VectorNormOptions>('norm', form, ['p', 'dim', 'keepdim', 'dtype'], 'p');
  const order = given.p === undefined ? 2 : checkScalar('norm', 'p', given.p);
  const keep = keywordKeepdim('norm', given.keepdim);
  const dtype = keywordDtype('norm', given.dtype);
  const list = given.dim === undefined ? undefined : dims('norm', self, given.dim);
  return call('norm', { self }, () => native.norm(self._h, order, list, keep, dtype));
}

export function logsumexpWith(self: Tensor, form: object, more: boolean): Tensor {
  noArgumentsAfter('logsumexp', more);
  const given = keywords<LogsumexpOptions>('logsumexp', form, ['dim', 'keepdim']);
  if (given.dim === undefined) {
    throw invalidArgument('logsumexp', 'dim', 'an integer or an array of integers', undefined);
  }
  const list = dims('logsumexp', self, given.dim);
  const keep = keywordKeepdim('logsumexp', given.keepdim);
  return call('logsumexp', { self }, () => native.logsumexp(self._h, list, keep));
}

export function alongWith(
  op: 'softmax' | 'logSoftmax' | 'cumsum' | 'cumprod',
  self: Tensor,
  form: object,
  more: boolean,
): Tensor {
  noArgumentsAfter(op, more);
  const given = keywords<AlongOptions>(op, form, ['dim', 'dtype']);
  const single = checkInt(op, 'dim', given.dim);
  normalizeDim(op, single, self.ndim);
  const dtype = keywordDtype(op, given.dtype);
  const run = native[op];
  return call(op, { self }, () => run(self._h, single, dtype));
}

export function countNonzeroWith(self: Tensor, form: object): Tensor {
  const given = keywords<CountNonzeroOptions>('countNonzero', form, ['dim']);
  const list = given.dim === undefined ? undefined : dims('countNonzero', self, given.dim);
  return call('countNonzero', { self }, () => native.countNonzero(self._h, list));
}

function keepdimNeedsDim(op: string): FlodlError {
  return new FlodlError('ERR_INVALID_ARGUMENT', 'keepdim needs a dim here', {
    op,
    expected: `{ dim, keepdim: true } (PyTorch's ${op} keeps dims only along a dim)`,
    got: '{ keepdim: true } without dim',
  });
}
