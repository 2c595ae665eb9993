// Loads the addon once per JS environment and hands it the FlodlError factory, so native
// failures arrive as real FlodlErrors with a classified code.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { FlodlError, type FlodlErrorCode } from '../errors.js';
import type { NativeBinding } from './binding-types.js';

const require = createRequire(import.meta.url);

const ADDON_PATH = 'build/Release/flodl_tensor_native.node';

// The package's build folder seen from src/internal (tests), dist/ (the ESM build) and
// dist/cjs/ (the CommonJS build); the first that exists is loaded.
function candidates(): string[] {
  const list: string[] = [];
  if (process.env.FLODL_ADDON) list.push(process.env.FLODL_ADDON);
  for (const up of ['../', '../../']) {
    const path = fileURLToPath(new URL(`${up}${ADDON_PATH}`, import.meta.url));
    if (!list.includes(path)) list.push(path);
  }
  return list;
}

// libtorch reports every failure as one exception type; its text says which kind it was.
const CLASSIFIERS: [RegExp, FlodlErrorCode][] = [
  [
    /stream is capturing|during capture|capture.*invalidated|CUDA graph|not permitted when stream/i,
    'ERR_CUDA_GRAPH',
  ],
  [
    /does not require grad|backward through the graph a second time|leaf Variable that requires grad|can require gradients|implicitly created only for scalar|modified by an inplace operation|One of the differentiated Tensors|Trying to backward|inference tensor/i,
    'ERR_AUTOGRAD',
  ],
  [
    /same device|CUDA is not available|no CUDA GPUs|Could not run .* with arguments from the 'CUDA'|invalid device ordinal/i,
    'ERR_DEVICE',
  ],
  [
    /must match the size|broadcast|cannot be multiplied|shapes cannot|Sizes of tensors must match|size mismatch|shape '\[|is invalid for input of size|inconsistent tensor size|must have the same number of elements|Expected .*(\d+)-?D|dimension specified as|number of dims|same size|view size is not compatible|expand|must be .*dimensional|is not a matrix|1D tensors|2D tensors|3D tensors|mat1|mat2|batch1|batch2/i,
    'ERR_SHAPE',
  ],
  [
    /dtype|scalar type|not implemented for '|Expected object of scalar type|can't be cast|result type|Boolean value|integer|Long|Float/i,
    'ERR_DTYPE',
  ],
  [
    /out of range|out of bounds|invalid argument|must be (non-)?negative|must be positive/i,
    'ERR_INVALID_ARGUMENT',
  ],
];

export function classifyNativeMessage(message: string): FlodlErrorCode {
  for (const [pattern, code] of CLASSIFIERS) if (pattern.test(message)) return code;
  return 'ERR_NATIVE';
}

function makeError(code: string, op: string, message: string): Error {
  if (code === 'ERR_NATIVE') {
    const classified = classifyNativeMessage(message);
    return new FlodlError(classified, `libtorch refused the operation: ${firstLine(message)}`, {
      op,
      nativeMessage: message,
    });
  }
  return new FlodlError(code as FlodlErrorCode, message, { op });
}

function firstLine(message: string): string {
  const line = message.split('\n').find((part) => part.trim() !== '') ?? message;
  return line.length > 400 ? `${line.slice(0, 400)}…` : line;
}

function load(): NativeBinding {
  const failures: string[] = [];
  for (const path of candidates()) {
    if (!existsSync(path)) {
      failures.push(`${path}: not built`);
      continue;
    }
    try {
      const binding = require(path) as NativeBinding;
      binding.setErrorFactory(makeError);
      return binding;
    } catch (error) {
      failures.push(`${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const neverBuilt = failures.every((failure) => failure.endsWith(': not built'));
  const hint = [
    neverBuilt
      ? 'the flodl native addon was never built (its install script did not run or failed). Possible solutions:'
      : 'the flodl native addon could not be loaded. Possible solutions:',
    '  - build it: npm rebuild @flodl/tensor-native (pnpm: allow its build, see the README; in the flodl repo: npm run setup)',
    '  - install libtorch first: apt-get install -y libtorch-dev libgloo-dev (or set LIBTORCH), then rebuild',
    '  - point FLODL_ADDON at a built flodl_tensor_native.node',
  ].join('\n');
  throw new FlodlError('ERR_BINDING_NOT_FOUND', hint, {
    op: 'load',
    expected: `a loadable ${ADDON_PATH} in the @flodl/tensor-native package`,
    got: failures.join('; '),
  });
}

/** The addon of this JS environment (loaded on first use). */
export const native: NativeBinding = load();
