// toString() in PyTorch's print format: 4 decimals (or scientific notation when the range
// is wide), integer-valued floats as `1.`, summarised with `...` past 1000 elements.
import { getDefaultDevice } from './device.js';
import type { Tensor } from './tensor.js';

const THRESHOLD = 1000;
const EDGE_ITEMS = 3;
const LINE_WIDTH = 80;
const PRECISION = 4;
const IMPLICIT_DTYPES = new Set(['float32', 'int64', 'bool']);

type Cell = number | boolean | bigint;

interface Formatter {
  width: number;
  format(value: Cell): string;
}

function makeFormatter(values: Cell[], kind: 'bool' | 'int' | 'float'): Formatter {
  if (kind === 'bool') return finish(values, (value) => (value ? 'True' : 'False'));
  if (kind === 'int') return finish(values, (value) => String(value));
  const finite = (values as number[]).filter((value) => Number.isFinite(value));
  const magnitudes = finite.map(Math.abs).filter((value) => value !== 0);
  const intMode = finite.every((value) => Number.isInteger(value));
  const largest = magnitudes.length > 0 ? Math.max(...magnitudes) : 0;
  const smallest = magnitudes.length > 0 ? Math.min(...magnitudes) : 0;
  const wide = magnitudes.length > 0 && (largest / smallest > 1000 || largest > 1e8);
  const scientific = intMode ? wide : wide || (magnitudes.length > 0 && smallest < 1e-4);
  const format = (value: number): string =>
    scientific ? exponential(value) : intMode ? `${fixed(value, 0)}.` : fixed(value, PRECISION);
  // Like PyTorch, the column width comes from the non-zero finite values: nan, inf and 0 do not widen it.
  const width = Math.max(1, ...finite.filter((value) => value !== 0).map((value) => format(value).length));
  return {
    width,
    format: (value) => {
      const number = value as number;
      const special = Number.isNaN(number)
        ? 'nan'
        : number === Infinity
          ? 'inf'
          : number === -Infinity
            ? '-inf'
            : null;
      return (special ?? format(number)).padStart(width);
    },
  };
}

/** `value` with `places` decimals, rounding exact ties to even as Python does; keeps -0's sign. */
function fixed(value: number, places: number): string {
  const text = roundHalfEven(value.toFixed(places), value.toFixed(Math.min(100, places + 60)), places);
  return Object.is(value, -0) || (value < 0 && !text.startsWith('-')) ? `-${text}` : text;
}

function exponential(value: number): string {
  let [mantissa, exponent] = value.toExponential(PRECISION).split('e') as [string, string];
  const [exactMantissa, exactExponent] = value.toExponential(PRECISION + 60).split('e') as [string, string];
  if (exactExponent === exponent) mantissa = roundHalfEven(mantissa, exactMantissa, PRECISION);
  const sign = exponent.startsWith('-') ? '-' : '+';
  const digits = exponent.replace(/^[+-]/, '').padStart(2, '0');
  return `${Object.is(value, -0) ? '-' : ''}${mantissa}e${sign}${digits}`;
}

/**
 * JS rounds exact ties away from zero; Python (and so PyTorch's printing) rounds them to
 * even. `rounded` has `places` decimals; `exact` is the same number with many more.
 */
function roundHalfEven(rounded: string, exact: string, places: number): string {
  const point = exact.indexOf('.');
  if (point < 0) return rounded;
  if (!/^50*$/.test(exact.slice(point + 1 + places))) return rounded;
  const truncated = exact.slice(0, point + 1 + places).replace(/\.$/, '');
  const lastDigit = Number(truncated[truncated.length - 1]);
  return lastDigit % 2 === 0 ? truncated : rounded;
}

function finish(values: Cell[], format: (value: Cell) => string): Formatter {
  const width = values.reduce<number>((max, value) => Math.max(max, format(value).length), 1);
  return { width, format: (value) => format(value).padStart(width) };
}

interface Layout {
  shape: readonly number[];
  summarize: boolean;
  read(flatIndex: number): Cell;
  strides: number[];
}

function shownIndices(size: number, summarize: boolean): (number | null)[] {
  if (!summarize || size <= 2 * EDGE_ITEMS) return Array.from({ length: size }, (_, k) => k);
  const head = Array.from({ length: EDGE_ITEMS }, (_, k) => k);
  const tail = Array.from({ length: EDGE_ITEMS }, (_, k) => size - EDGE_ITEMS + k);
  return [...head, null, ...tail];
}

function collect(layout: Layout, dim: number, offset: number, out: Cell[]): void {
  if (dim === layout.shape.length) {
    out.push(layout.read(offset));
    return;
  }
  for (const k of shownIndices(layout.shape[dim]!, layout.summarize)) {
    if (k !== null) collect(layout, dim + 1, offset + k * layout.strides[dim]!, out);
  }
}

function render(layout: Layout, formatter: Formatter, dim: number, offset: number, indent: number): string {
  const shape = layout.shape;
  if (dim === shape.length) return formatter.format(layout.read(offset));
  const items = shownIndices(shape[dim]!, layout.summarize);
  if (dim === shape.length - 1) {
    const cells = items.map((k) =>
      k === null ? ' ...' : formatter.format(layout.read(offset + k * layout.strides[dim]!)),
    );
    const perLine = Math.max(1, Math.floor((LINE_WIDTH - indent) / (formatter.width + 2)));
    const lines: string[] = [];
    for (let start = 0; start < cells.length; start += perLine)
      lines.push(cells.slice(start, start + perLine).join(', '));
    return `[${lines.join(`,\n${' '.repeat(indent + 1)}`)}]`;
  }
  const separator = `,${'\n'.repeat(shape.length - dim - 1)}${' '.repeat(indent + 1)}`;
  const parts = items.map((k) =>
    k === null ? '...' : render(layout, formatter, dim + 1, offset + k * layout.strides[dim]!, indent + 1),
  );
  return `[${parts.join(separator)}]`;
}

/** Formats a tensor the way PyTorch prints it. */
export function formatTensor(tensor: Tensor): string {
  const shape = tensor.shape;
  const dtype = tensor.dtype;
  const device = tensor.device;
  const suffixes: string[] = [];
  // Like PyTorch, the device shows unless it is the default one (`setDefaultDevice`).
  if (device !== getDefaultDevice()) suffixes.push(`device='${device}'`);
  const numel = shape.reduce((product, size) => product * size, 1);
  if (numel === 0 && shape.length > 1) suffixes.unshift(`size=(${shape.join(', ')})`);
  // An empty tensor shows every dtype but PyTorch's default.
  if (numel === 0 ? dtype !== 'float32' : !IMPLICIT_DTYPES.has(dtype)) suffixes.push(`dtype=torch.${dtype}`);
  const autograd = tensor as unknown as { gradFn?: string | null; requiresGrad?: boolean };
  const gradFn = autograd.gradFn;
  if (gradFn) suffixes.push(`grad_fn=<${gradFn}>`);
  else if (autograd.requiresGrad === true) suffixes.push('requires_grad=True');
  const tail = suffixes.length > 0 ? `, ${suffixes.join(', ')}` : '';
  if (numel === 0) return `tensor([]${tail})`;
  const flat = tensor.toTypedArray();
  const kind =
    dtype === 'bool' ? 'bool' : dtype.startsWith('float') || dtype === 'bfloat16' ? 'float' : 'int';
  const strides: number[] = new Array(shape.length);
  let step = 1;
  for (let k = shape.length - 1; k >= 0; k--) {
    strides[k] = step;
    step *= shape[k]!;
  }
  const read = (index: number): Cell => {
    const value = flat[index]!;
    return kind === 'bool' ? value !== 0 : typeof value === 'bigint' ? value : (value as number);
  };
  const layout: Layout = { shape, summarize: numel > THRESHOLD, read, strides };
  const shown: Cell[] = [];
  collect(layout, 0, 0, shown);
  const formatter = makeFormatter(shown, kind);
  const body = render(layout, formatter, 0, 0, 'tensor('.length);
  return `tensor(${body}${tail})`;
}
